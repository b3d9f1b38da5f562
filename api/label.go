package api

import (
	"context"
	"slices"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
)

// The owner's label rules (label/set, label/list, label/delete), kept by
// the door (auth), which applies them to every read.

// labelSet adds or replaces the rule for a glob.
func (h *Handler) labelSet(ctx context.Context, c *call, a *apiv1.LabelSetRequest) (*apiv1.LabelRulesResponse, error) {
	r := label.Rule(a.LabelRule)
	if err := r.Validate(); err != nil {
		return nil, invalid(err.Error())
	}
	return h.editRules(ctx, a.Repo, func(rs []label.Rule) []label.Rule {
		if i := slices.IndexFunc(rs, func(x label.Rule) bool { return x.Glob == r.Glob }); i >= 0 {
			rs[i] = r
			return rs
		}
		return append(rs, r)
	})
}

// labelDelete removes the rule for a glob; removing one that is not there
// succeeds.
func (h *Handler) labelDelete(ctx context.Context, c *call, a *apiv1.LabelDeleteRequest) (*apiv1.LabelRulesResponse, error) {
	if err := required("repo", a.Repo, "glob", a.Glob); err != nil {
		return nil, err
	}
	return h.editRules(ctx, a.Repo, func(rs []label.Rule) []label.Rule {
		return slices.DeleteFunc(rs, func(x label.Rule) bool { return x.Glob == a.Glob })
	})
}

// labelList lists the rules.
func (h *Handler) labelList(ctx context.Context, c *call, a *apiv1.LabelListRequest) (*apiv1.LabelRulesResponse, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	rs, err := h.auth.LabelRules(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	return rulesOut(a.Repo, rs), nil
}

// editRules applies edit to repo's rules and stores them. Concurrent edits
// by the owner are last-writer-wins.
func (h *Handler) editRules(ctx context.Context, repo string, edit func([]label.Rule) []label.Rule) (*apiv1.LabelRulesResponse, error) {
	if err := required("repo", repo); err != nil {
		return nil, err
	}
	rs, err := h.auth.LabelRules(ctx, repo)
	if err != nil {
		return nil, err
	}
	rs = edit(rs)
	if err := h.auth.SetLabelRules(ctx, repo, rs); err != nil {
		return nil, err
	}
	return rulesOut(repo, rs), nil
}

// rulesOut is rules on the wire.
func rulesOut(repo string, rs []label.Rule) *apiv1.LabelRulesResponse {
	out := &apiv1.LabelRulesResponse{Repo: repo, Rules: []apiv1.LabelRule{}}
	for _, r := range rs {
		out.Rules = append(out.Rules, apiv1.LabelRule(r))
	}
	return out
}

// labelsOut is an entry's effective labels for the caller, nil when the
// rules cannot be read.
func (h *Handler) labelsOut(ctx context.Context, c *call, repo, key string, e *manifest.Entry) *apiv1.Labels {
	l, err := h.auth.Effective(ctx, c.p, repo, key, e)
	if err != nil {
		return nil
	}
	return &apiv1.Labels{Origin: l.Origin, Sensitivity: l.Sensitivity, Reviewed: l.Reviewed}
}

// handoffSet adds or replaces the handoff for a glob.
func (h *Handler) handoffSet(ctx context.Context, c *call, a *apiv1.HandoffSetRequest) (*apiv1.HandoffsResponse, error) {
	if err := required("glob", a.Glob); err != nil {
		return nil, err
	}
	return h.editHandoffs(ctx, a.Repo, func(hs []auth.Handoff) []auth.Handoff {
		n := auth.Handoff(a.Handoff)
		if i := slices.IndexFunc(hs, func(x auth.Handoff) bool { return x.Glob == n.Glob }); i >= 0 {
			hs[i] = n
			return hs
		}
		return append(hs, n)
	})
}

// handoffDelete removes the handoff for a glob.
func (h *Handler) handoffDelete(ctx context.Context, c *call, a *apiv1.HandoffDeleteRequest) (*apiv1.HandoffsResponse, error) {
	return h.editHandoffs(ctx, a.Repo, func(hs []auth.Handoff) []auth.Handoff {
		return slices.DeleteFunc(hs, func(x auth.Handoff) bool { return x.Glob == a.Glob })
	})
}

// handoffList lists the handoffs.
func (h *Handler) handoffList(ctx context.Context, c *call, a *apiv1.HandoffListRequest) (*apiv1.HandoffsResponse, error) {
	return h.editHandoffs(ctx, a.Repo, nil)
}

// editHandoffs applies edit (nil: none) to repo's handoffs, stores them
// and answers them.
func (h *Handler) editHandoffs(ctx context.Context, repo string, edit func([]auth.Handoff) []auth.Handoff) (*apiv1.HandoffsResponse, error) {
	if err := required("repo", repo); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, repo); err != nil {
		return nil, err
	}
	hs, err := h.auth.Handoffs(ctx, repo)
	if err != nil {
		return nil, err
	}
	if edit != nil {
		hs = edit(hs)
		if err := h.auth.SetHandoffs(ctx, repo, hs); err != nil {
			return nil, err
		}
	}
	out := &apiv1.HandoffsResponse{Repo: repo, Handoffs: []apiv1.Handoff{}}
	for _, x := range hs {
		out.Handoffs = append(out.Handoffs, apiv1.Handoff(x))
	}
	return out, nil
}
