package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/memory"
	"github.com/agentnas/nas/record"
)

// Cascade forget (forget/run, the owner's): the files the selector's
// globs match and their derivatives (notes that cite one of them, or
// whose subject is the selector's; the repository's search index; what
// attached sources materialised of them) are removed from every branch,
// protected or not, in one commit a branch, and their trash entries
// dropped. Then, unless the request keeps history, every commit,
// checkpoint and deleted branch that still holds one of the keys is
// rewritten without it (branch.ForgetHistory) and a collection deletes
// the old commits and the chunks only they held, scrubbing their bytes
// out of the segments that stay. A legal hold on any key found, at a head
// or in history, blocks the whole request.

// notCovered is what a forget never covers.
var notCovered = []string{"copies outside the NAS", "model provider logs", "model weights"}

// forgetPlan is what a forget removes: keys by branch, and how many of
// them are notes.
type forgetPlan struct {
	keys  map[string][]string
	notes int
	files int
	// remotes are the attached-source objects of lazy files at heads.
	remotes []manifest.Remote
	// sealed are the key domains of sensitive files at heads.
	sealed sealedAt
}

// forgetRun answers forget/run.
func (h *Handler) forgetRun(ctx context.Context, c *call, a *apiv1.ForgetRequest) (*apiv1.ForgetReport, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	if len(a.Paths) == 0 && len(a.Domains) == 0 || slices.Contains(a.Paths, "") {
		return nil, invalid("paths: at least one non-empty glob (or domains to destroy)")
	}
	brs, err := h.b.ListBranches(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	plan := &forgetPlan{keys: map[string][]string{}}
	for _, b := range brs {
		if err := h.planBranch(ctx, a, b.Name, plan); err != nil {
			return nil, err
		}
	}
	if err := h.checkHolds(ctx, c, a, plan); err != nil {
		return nil, err
	}
	if err := h.checkDomains(ctx, c, a, plan); err != nil {
		return nil, err
	}
	rep := newForgetReport(a, plan)
	domains := domainsToDestroy(a, plan, rep)
	if a.DryRun {
		rep.Report.KeysDestroyed = append(rep.Report.KeysDestroyed, domains...)
		return rep, nil
	}
	if err := h.destroyKeys(domains, rep); err != nil {
		return nil, err
	}
	if err := h.carryOut(ctx, c, a, rep, plan); err != nil {
		return nil, err
	}
	if a.KeepHistory {
		err = h.evictLazy(ctx, plan.remotes)
	} else {
		err = h.rewriteHistory(ctx, c, a, rep, plan)
	}
	if err != nil {
		return nil, err
	}
	return rep, h.record(ctx, c, record.Event{Kind: record.KindForget, Repo: a.Repo, Subject: record.Subject{Path: strings.Join(a.Paths, " ")},
		Details: map[string]string{"forget_id": rep.ForgetID, "files": fmt.Sprint(plan.files), "notes": fmt.Sprint(plan.notes),
			"branches": fmt.Sprint(len(plan.keys)), "history": rep.Report.History, "keys_destroyed": strings.Join(rep.Report.KeysDestroyed, " ")}})
}

// planBranch adds the keys of br the request removes to plan: those a
// glob matches, and the notes derived from them or about the subject.
func (h *Handler) planBranch(ctx context.Context, a *apiv1.ForgetRequest, br string, plan *forgetPlan) error {
	after := ""
	for {
		res, err := h.b.List(ctx, a.Repo, br, branch.ListOptions{After: after, MaxKeys: apiv1.MaxLimit})
		if err != nil {
			return err
		}
		for _, o := range res.Objects {
			note, err := h.derivedNote(ctx, a, br, o)
			if err != nil {
				return err
			}
			if err := h.noteSealed(ctx, plan, o.Key, o.Entry, note || anyGlob(a.Paths, o.Key)); err != nil {
				return err
			}
			switch {
			case anyGlob(a.Paths, o.Key):
				plan.keys[br] = append(plan.keys[br], o.Key)
				plan.files++
				if o.Entry.Remote != nil {
					plan.remotes = append(plan.remotes, *o.Entry.Remote)
				}
			case note:
				plan.keys[br] = append(plan.keys[br], o.Key)
				plan.notes++
			}
		}
		if !res.Truncated {
			return nil
		}
		after = res.Next
	}
}

// derivedNote reports whether o is a note of an Agent Home that cites a
// forgotten path or whose subject is the forgotten subject.
func (h *Handler) derivedNote(ctx context.Context, a *apiv1.ForgetRequest, br string, o branch.Object) (bool, error) {
	if !strings.HasPrefix(o.Key, memory.HomesDir) || !strings.Contains(o.Key, "/"+memory.MemoryDir) || anyGlob(a.Paths, o.Key) {
		return false, nil
	}
	f := &file{t: auth.Target{Repo: a.Repo, Branch: br, Key: o.Key}, e: o.Entry}
	if o.Entry.Size > maxNoteFile {
		return false, nil
	}
	if err := h.load(ctx, f); err != nil {
		return false, err
	}
	n, err := memory.Parse(f.data)
	if err != nil {
		return false, nil // not a note
	}
	if a.Subject != "" && n.Subject == a.Subject {
		return true, nil
	}
	for _, s := range n.Sources {
		if p, err := evidence.Parse(s); err == nil && p.Repo == a.Repo && anyGlob(a.Paths, p.Path) {
			return true, nil
		}
	}
	return false, nil
}

// anyGlob reports whether one of globs matches key.
func anyGlob(globs []string, key string) bool {
	for _, g := range globs {
		if glob.Match(glob.Clean(g), key) {
			return true
		}
	}
	return false
}

// checkHolds refuses (recorded) a forget that would remove a held key.
func (h *Handler) checkHolds(ctx context.Context, c *call, a *apiv1.ForgetRequest, plan *forgetPlan) error {
	hs, err := h.holds(ctx, a.Repo)
	if err != nil {
		return err
	}
	for br, keys := range plan.keys {
		if err := h.refuseHeld(ctx, c, a.Repo, hs, keys, "on "+br); err != nil {
			return err
		}
	}
	return nil
}

// refuseHeld refuses (recorded) when one of keys (found where) is held.
func (h *Handler) refuseHeld(ctx context.Context, c *call, repo string, hs []apiv1.Hold, keys []string, where string) error {
	for _, k := range keys {
		hold := holdOf(hs, k)
		if hold == nil {
			continue
		}
		msg := fmt.Sprintf("a legal hold on %s (%s) blocks forgetting %s %s", hold.Glob, hold.Reason, k, where)
		if err := h.record(ctx, c, record.Event{Kind: record.KindDenied, Repo: repo, Subject: record.Subject{Path: k},
			Decision: record.Decision{Effect: record.EffectDeny, Rule: "legal-hold", Reason: msg}}); err != nil {
			return err
		}
		return &Error{Status: http.StatusForbidden, Code: apiv1.CodeAccessDenied, Message: msg}
	}
	return nil
}

// newForgetReport is the report of plan, before anything is done.
func newForgetReport(a *apiv1.ForgetRequest, plan *forgetPlan) *apiv1.ForgetReport {
	rep := &apiv1.ForgetReport{ForgetID: "fgt_" + strings.ToLower(requestID()), Repo: a.Repo, Selector: apiv1.ForgetSelector{Paths: a.Paths, Subject: a.Subject},
		RetentionClass: "normal", Removed: plan.keys, State: "dry_run", DryRun: a.DryRun,
		Report: apiv1.ForgetOutcome{FilesRemoved: plan.files, DerivedRemoved: apiv1.ForgetDerived{Notes: plan.notes},
			KeysDestroyed: []string{}, SnapshotsPending: []string{}, NotCovered: slices.Clone(notCovered)}}
	rep.Report.NotCovered = append(rep.Report.NotCovered, "exports (nas export) and Git clones made before",
		"the flight recorder: its records keep the paths and content hashes (not the bytes) of what was read and written; it is hash-chained and never rewritten")
	if a.KeepHistory {
		rep.Report.History = "kept (keep_history): the commits before the forget still hold the content"
		rep.Report.NotCovered = append(rep.Report.NotCovered, "earlier commits, checkpoints and deleted branches of this repository (history kept)")
	} else {
		rep.Report.History = "to be rewritten: every commit, checkpoint and deleted branch that holds a forgotten key"
		rep.Report.NotCovered = append(rep.Report.NotCovered,
			"the bytes of small files (64 KiB or less, kept inside the metadata store) in its files until its compaction rewrites them")
	}
	if len(plan.remotes) > 0 {
		rep.Report.NotCovered = append(rep.Report.NotCovered,
			"the attached sources' own objects: a refresh of the source attaches them again unless they are removed there")
	}
	return rep
}

// rewriteHistory rewrites the repository's history without the forgotten
// keys (a held key found there refuses the request before anything
// changes), evicts what sources materialised of them, collects garbage
// and fills the report in.
func (h *Handler) rewriteHistory(ctx context.Context, c *call, a *apiv1.ForgetRequest, rep *apiv1.ForgetReport, plan *forgetPlan) error {
	hs, err := h.holds(ctx, a.Repo)
	if err != nil {
		return err
	}
	forgotten := map[string]bool{}
	for _, keys := range plan.keys {
		for _, k := range keys {
			forgotten[k] = true
		}
	}
	st, err := h.b.ForgetHistory(ctx, a.Repo, func(k string) bool { return forgotten[k] || anyGlob(a.Paths, k) }, branch.RewriteOptions{ID: rep.ForgetID,
		Check: func(keys []string) error { return h.refuseHeld(ctx, c, a.Repo, hs, keys, "in the history") }})
	if err != nil {
		return err
	}
	// What sources materialised is a root of the collection: evict first.
	if err := h.evictLazy(ctx, append(plan.remotes, st.Remotes...)); err != nil {
		return err
	}
	rep.Report.History = fmt.Sprintf("rewritten (%d commits, %d of them held a forgotten key; %d versions dropped)", st.Commits, st.Changed, st.Versions)
	gc, err := h.b.Collect(ctx, branch.GCOptions{Retention: maxRetention})
	if errors.Is(err, branch.ErrPeers) {
		// Done but for the bytes: they go at the next collection (another
		// gateway is collecting, or one did not take part).
		rep.Report.History += "; the bytes stay on disk until the next collection (nas gc): " + err.Error()
		rep.State = "pending_collection"
		return h.newHeads(ctx, a.Repo, rep)
	}
	if err != nil {
		return fmt.Errorf("history rewritten; the collection after it failed (run nas gc): %w", err)
	}
	rep.Report.Collected = &apiv1.ForgetCollected{Commits: gc.ExpiredCommits, Chunks: gc.Chunks.Chunks, Bytes: gc.Chunks.Bytes, ScrubbedBytes: gc.Chunks.ScrubbedBytes}
	rep.State = "done"
	return h.newHeads(ctx, a.Repo, rep)
}

// newHeads puts the rewritten heads of the branches a forget committed to
// in rep.Commits.
func (h *Handler) newHeads(ctx context.Context, repo string, rep *apiv1.ForgetReport) error {
	brs, err := h.b.ListBranches(ctx, repo)
	if err != nil {
		return err
	}
	for _, b := range brs {
		if _, ok := rep.Commits[b.Name]; ok {
			rep.Commits[b.Name] = b.Head.String()
		}
	}
	return nil
}

// evictLazy drops what attached sources materialised of remotes.
func (h *Handler) evictLazy(ctx context.Context, remotes []manifest.Remote) error {
	for i := range remotes {
		if h.lazy == nil {
			return nil
		}
		if err := h.lazy.EvictObject(ctx, &remotes[i]); err != nil {
			return err
		}
	}
	return nil
}

// carryOut removes the plan's keys branch by branch, deletes the search
// index (it is rebuilt on the next search, without them) and, when
// history is kept, lists the checkpoints that still hold the old content.
func (h *Handler) carryOut(ctx context.Context, c *call, a *apiv1.ForgetRequest, rep *apiv1.ForgetReport, plan *forgetPlan) error {
	repo := a.Repo
	rep.Commits, rep.State = map[string]string{}, "pending_history"
	for br, keys := range plan.keys {
		id, _, err := h.b.ForgetKeys(ctx, repo, br, keys, branch.CommitOptions{Message: "forget " + rep.ForgetID, Principal: c.p.AccessKey})
		if err != nil {
			return err
		}
		if !id.IsZero() {
			rep.Commits[br] = id.String()
		}
	}
	if h.search != nil {
		if st, err := h.search.Status(repo); err == nil && len(st) > 0 {
			if err := h.search.Delete(repo); err != nil {
				return err
			}
			rep.Report.DerivedRemoved.Indexes = 1
		}
	}
	if !a.KeepHistory {
		return nil
	}
	brs, err := h.b.ListBranches(ctx, repo)
	if err != nil {
		return err
	}
	for _, b := range brs {
		cps, err := h.b.ListCheckpoints(ctx, repo, b.Name)
		if err != nil {
			return err
		}
		for _, cp := range cps {
			rep.Report.SnapshotsPending = append(rep.Report.SnapshotsPending, fmt.Sprintf("checkpoint %s of %s (until deleted)", cp.Name, b.Name))
		}
	}
	return nil
}
