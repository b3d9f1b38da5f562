package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/record"
)

// Repositories and branches: owner operations.

func (h *Handler) repoCreate(ctx context.Context, c *call, a *apiv1.RepoCreateRequest) (*apiv1.RepoResponse, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	protected := a.Protected == nil || *a.Protected
	r, err := h.b.CreateRepo(ctx, a.Repo, branch.CreateRepoOptions{Protected: protected, Principal: c.p.AccessKey})
	if err != nil {
		return nil, err
	}
	return &apiv1.RepoResponse{Repo: repoOut(r)}, nil
}

func (h *Handler) repoGet(ctx context.Context, c *call, a *apiv1.RepoGetRequest) (*apiv1.RepoResponse, error) {
	r, err := h.b.GetRepo(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	return &apiv1.RepoResponse{Repo: repoOut(r)}, nil
}

func (h *Handler) repoList(ctx context.Context, c *call, a *apiv1.RepoListRequest) (*apiv1.RepoListResponse, error) {
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	repos, err := h.b.ListRepos(ctx)
	if err != nil {
		return nil, err
	}
	out, next := pageOf(repos, a.Cursor, limit, func(r *branch.Repo) string { return r.Name }, repoOut)
	return &apiv1.RepoListResponse{Repos: out, NextCursor: next}, nil
}

func (h *Handler) repoDelete(ctx context.Context, c *call, a *apiv1.RepoDeleteRequest) (*apiv1.DeletedResponse, error) {
	if err := h.b.DeleteRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	return &apiv1.DeletedResponse{Deleted: a.Repo}, nil
}

func (h *Handler) branchCreate(ctx context.Context, c *call, a *apiv1.BranchCreateRequest) (*apiv1.BranchResponse, error) {
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	u, err := limitsUpdate(a.Limits, time.Now())
	if err != nil {
		return nil, err
	}
	var lim branch.Limits
	if u.ExpiresAt != nil {
		lim.ExpiresAt = *u.ExpiresAt
	}
	if u.QuotaBytes != nil {
		lim.QuotaBytes = *u.QuotaBytes
	}
	if u.QuotaObjects != nil {
		lim.QuotaObjects = *u.QuotaObjects
	}
	e := record.Event{Kind: record.KindBranchCreated, Repo: a.Repo, Branch: a.Name, Details: detail("from " + a.From + describeLimits(a.Limits))}
	if err := h.record(ctx, c, e); err != nil {
		return nil, err
	}
	b, err := h.b.CreateBranchWith(ctx, a.Repo, a.Name, a.From, lim)
	if err != nil {
		return nil, err
	}
	return &apiv1.BranchResponse{Branch: branchOut(b)}, nil
}

// limitsUpdate reads a branch's time to live and quotas as the API takes
// them: ttl is a duration from now ("0" removes it); a quota of 0 removes
// it; nothing may be negative.
func limitsUpdate(a apiv1.Limits, now time.Time) (branch.LimitsUpdate, error) {
	u := branch.LimitsUpdate{QuotaBytes: a.QuotaBytes, QuotaObjects: a.QuotaObjects}
	for _, q := range []*int64{a.QuotaBytes, a.QuotaObjects} {
		if q != nil && *q < 0 {
			return u, &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: "quotas must not be negative (0 removes one)"}
		}
	}
	if a.TTL != nil {
		d, err := time.ParseDuration(*a.TTL)
		if err != nil || d < 0 || d > maxBranchTTL {
			return u, &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: "ttl: want a duration such as 72h, at most 100 years (0 removes it)"}
		}
		var t time.Time
		if d > 0 {
			t = now.Add(d).UTC()
		}
		u.ExpiresAt = &t
	}
	return u, nil
}

// maxBranchTTL bounds a branch's time to live (so now+ttl cannot wrap).
const maxBranchTTL = 100 * 365 * 24 * time.Hour

func describeLimits(a apiv1.Limits) string {
	var s string
	if a.TTL != nil {
		s += ", ttl " + *a.TTL
	}
	if a.QuotaBytes != nil {
		s += fmt.Sprintf(", quota %d bytes", *a.QuotaBytes)
	}
	if a.QuotaObjects != nil {
		s += fmt.Sprintf(", quota %d objects", *a.QuotaObjects)
	}
	return s
}

// branchLimits changes a branch's time to live and quotas.
func (h *Handler) branchLimits(ctx context.Context, c *call, a *apiv1.BranchLimitsRequest) (*apiv1.BranchResponse, error) {
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	u, err := limitsUpdate(a.Limits, time.Now())
	if err != nil {
		return nil, err
	}
	e := record.Event{Kind: record.KindBranchLimits, Repo: a.Repo, Branch: a.Name, Details: detail(strings.TrimPrefix(describeLimits(a.Limits), ", "))}
	if err := h.record(ctx, c, e); err != nil {
		return nil, err
	}
	b, err := h.b.SetLimits(ctx, a.Repo, a.Name, u)
	if err != nil {
		return nil, err
	}
	return h.branchAnswer(ctx, b)
}

func (h *Handler) branchGet(ctx context.Context, c *call, a *apiv1.BranchGetRequest) (*apiv1.BranchResponse, error) {
	b, err := h.b.GetBranch(ctx, a.Repo, a.Name)
	if err != nil {
		return nil, err
	}
	return h.branchAnswer(ctx, b)
}

// branchAnswer describes a branch, with its usage when it has a quota.
func (h *Handler) branchAnswer(ctx context.Context, b *branch.Branch) (*apiv1.BranchResponse, error) {
	j := branchOut(b)
	if b.Limits.QuotaBytes > 0 || b.Limits.QuotaObjects > 0 {
		u, err := h.b.Usage(ctx, b.Repo, b.Name)
		if err != nil {
			return nil, err
		}
		j.Usage = &apiv1.Usage{Bytes: u.Bytes, Objects: u.Objects}
	}
	return &apiv1.BranchResponse{Branch: j}, nil
}

func (h *Handler) branchList(ctx context.Context, c *call, a *apiv1.BranchListRequest) (*apiv1.BranchListResponse, error) {
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	bs, err := h.b.ListBranches(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	out, next := pageOf(bs, a.Cursor, limit, func(b *branch.Branch) string { return b.Name }, branchOut)
	return &apiv1.BranchListResponse{Branches: out, NextCursor: next}, nil
}

func (h *Handler) branchDelete(ctx context.Context, c *call, a *apiv1.BranchDeleteRequest) (*apiv1.DeletedResponse, error) {
	if err := h.record(ctx, c, record.Event{Kind: record.KindBranchDeleted, Repo: a.Repo, Branch: a.Name}); err != nil {
		return nil, err
	}
	if err := h.b.DeleteBranchBy(ctx, a.Repo, a.Name, deletedBy(c)); err != nil {
		return nil, err
	}
	return &apiv1.DeletedResponse{Deleted: a.Name}, nil
}

func (h *Handler) branchProtect(ctx context.Context, c *call, a *apiv1.BranchProtectRequest) (*apiv1.BranchResponse, error) {
	return h.setProtected(ctx, c, apiv1.BranchRequest(*a), true)
}

func (h *Handler) branchUnprotect(ctx context.Context, c *call, a *apiv1.BranchUnprotectRequest) (*apiv1.BranchResponse, error) {
	return h.setProtected(ctx, c, apiv1.BranchRequest(*a), false)
}

func (h *Handler) setProtected(ctx context.Context, c *call, a apiv1.BranchRequest, on bool) (*apiv1.BranchResponse, error) {
	kind := record.KindBranchUnprotected
	if on {
		kind = record.KindBranchProtected
	}
	if err := h.record(ctx, c, record.Event{Kind: kind, Repo: a.Repo, Branch: a.Name}); err != nil {
		return nil, err
	}
	if err := h.b.SetProtected(ctx, a.Repo, a.Name, on); err != nil {
		return nil, err
	}
	b, err := h.b.GetBranch(ctx, a.Repo, a.Name)
	if err != nil {
		return nil, err
	}
	return &apiv1.BranchResponse{Branch: branchOut(b)}, nil
}
