package api

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/record"
)

// Legal holds (hold/set, hold/list, hold/delete): a repository
// configuration document, "holds"; each change is recorded. A hold on any
// key a forget would remove blocks the whole forget.

// holdsConfig names the repository document of holds; maxHolds bounds it.
const (
	holdsConfig = "holds"
	maxHolds    = 128
)

// holds reads repo's holds.
func (h *Handler) holds(ctx context.Context, repo string) ([]apiv1.Hold, error) {
	doc, err := h.b.RepoConfig(ctx, repo, holdsConfig)
	if errors.Is(err, branch.ErrNoSuchConfig) {
		return []apiv1.Hold{}, nil
	}
	if err != nil {
		return nil, err
	}
	var hs []apiv1.Hold
	return hs, json.Unmarshal(doc, &hs)
}

// holdOf is the first hold that covers key, or nil.
func holdOf(hs []apiv1.Hold, key string) *apiv1.Hold {
	for i := range hs {
		if glob.Match(glob.Clean(hs[i].Glob), key) {
			return &hs[i]
		}
	}
	return nil
}

// holdSet places or replaces a hold.
func (h *Handler) holdSet(ctx context.Context, c *call, a *apiv1.HoldSetRequest) (*apiv1.HoldsResponse, error) {
	if err := required("repo", a.Repo, "glob", a.Glob); err != nil {
		return nil, err
	}
	return h.editHolds(ctx, c, a.Repo, record.KindHoldSet, a.Glob, a.Reason, func(hs []apiv1.Hold) []apiv1.Hold {
		return putGlob(hs, apiv1.Hold{Glob: a.Glob, Reason: a.Reason, SetAt: c.p.Now().UTC()}, a.Glob, holdGlob)
	})
}

// holdDelete lifts a hold.
func (h *Handler) holdDelete(ctx context.Context, c *call, a *apiv1.HoldDeleteRequest) (*apiv1.HoldsResponse, error) {
	if err := required("repo", a.Repo, "glob", a.Glob); err != nil {
		return nil, err
	}
	return h.editHolds(ctx, c, a.Repo, record.KindHoldLifted, a.Glob, "", func(hs []apiv1.Hold) []apiv1.Hold {
		return dropGlob(hs, a.Glob, holdGlob)
	})
}

// holdList lists the holds.
func (h *Handler) holdList(ctx context.Context, c *call, a *apiv1.HoldListRequest) (*apiv1.HoldsResponse, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	hs, err := h.holds(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	return &apiv1.HoldsResponse{Repo: a.Repo, Holds: hs}, nil
}

// editHolds records the change, then applies edit and stores the holds.
func (h *Handler) editHolds(ctx context.Context, c *call, repo string, kind record.Kind, g, reason string, edit func([]apiv1.Hold) []apiv1.Hold) (*apiv1.HoldsResponse, error) {
	hs, err := h.holds(ctx, repo)
	if err != nil {
		return nil, err
	}
	if hs = edit(hs); len(hs) > maxHolds {
		return nil, invalid("at most 128 holds a repository")
	}
	if err := h.record(ctx, c, record.Event{Kind: kind, Repo: repo, Subject: record.Subject{Path: g}, Details: detail(reason)}); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(hs)
	if err != nil {
		return nil, err
	}
	if err := h.b.SetRepoConfig(ctx, repo, holdsConfig, doc); err != nil {
		return nil, err
	}
	return &apiv1.HoldsResponse{Repo: repo, Holds: hs}, nil
}
