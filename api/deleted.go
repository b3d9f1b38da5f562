package api

import (
	"context"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/record"
)

// Deleted branches are the owner's to list and restore (the routes table
// keeps leases out through the door's OwnerOnly).

func (h *Handler) branchListDeleted(ctx context.Context, c *call, a *apiv1.BranchListDeletedRequest) (*apiv1.BranchListDeletedResponse, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	ds, err := h.b.ListDeleted(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	keep := h.b.DeletedRetention()
	out := &apiv1.BranchListDeletedResponse{Deleted: []apiv1.DeletedBranch{}}
	for _, d := range ds {
		if d.Name <= a.Cursor {
			continue
		}
		if len(out.Deleted) >= limit && d.Name != out.Deleted[len(out.Deleted)-1].Name {
			out.NextCursor = out.Deleted[len(out.Deleted)-1].Name
			break
		}
		out.Deleted = append(out.Deleted, apiv1.DeletedBranch{Repo: d.Repo, Name: d.Name, Head: d.HeadH, Base: d.Base,
			DeletedAt: d.DeletedAt.UTC(), DeletedBy: d.DeletedBy, ExpiresAt: d.ExpiresAt(keep).UTC()})
	}
	return out, nil
}

func (h *Handler) branchRestore(ctx context.Context, c *call, a *apiv1.BranchRestoreRequest) (*apiv1.BranchResponse, error) {
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	as := a.As
	if as == "" {
		as = a.Name
	}
	e := record.Event{Kind: record.KindBranchCreated, Repo: a.Repo, Branch: as, Details: detail("restored deleted branch " + a.Name)}
	if err := h.record(ctx, c, e); err != nil {
		return nil, err
	}
	b, err := h.b.RestoreBranch(ctx, a.Repo, a.Name, a.As)
	if err != nil {
		return nil, err
	}
	return &apiv1.BranchResponse{Branch: branchOut(b)}, nil
}

// deletedBy names who deletes a branch in its restorable record: the
// access key, as commits name their principal.
func deletedBy(c *call) string { return c.p.AccessKey }
