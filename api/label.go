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
	return h.editRules(ctx, a.Repo, func(rs []label.Rule) []label.Rule { return putGlob(rs, r, r.Glob, ruleGlob) })
}

// labelDelete removes the rule for a glob; removing one that is not there
// succeeds.
func (h *Handler) labelDelete(ctx context.Context, c *call, a *apiv1.LabelDeleteRequest) (*apiv1.LabelRulesResponse, error) {
	if err := required("repo", a.Repo, "glob", a.Glob); err != nil {
		return nil, err
	}
	return h.editRules(ctx, a.Repo, func(rs []label.Rule) []label.Rule {
		return dropGlob(rs, a.Glob, ruleGlob)
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
		return putGlob(hs, auth.Handoff(a.Handoff), a.Glob, handoffGlob)
	})
}

// handoffDelete removes the handoff for a glob.
func (h *Handler) handoffDelete(ctx context.Context, c *call, a *apiv1.HandoffDeleteRequest) (*apiv1.HandoffsResponse, error) {
	return h.editHandoffs(ctx, a.Repo, func(hs []auth.Handoff) []auth.Handoff {
		return dropGlob(hs, a.Glob, handoffGlob)
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

// The repository documents of label rules, handoffs and holds are lists
// keyed by glob: putGlob replaces the item for a glob or appends it,
// dropGlob removes it (removing one that is not there changes nothing).
func putGlob[T any](xs []T, x T, g string, globOf func(T) string) []T {
	if i := slices.IndexFunc(xs, func(y T) bool { return globOf(y) == g }); i >= 0 {
		xs[i] = x
		return xs
	}
	return append(xs, x)
}

func dropGlob[T any](xs []T, g string, globOf func(T) string) []T {
	return slices.DeleteFunc(xs, func(y T) bool { return globOf(y) == g })
}

func ruleGlob(r label.Rule) string      { return r.Glob }
func handoffGlob(h auth.Handoff) string { return h.Glob }
func holdGlob(h apiv1.Hold) string      { return h.Glob }
