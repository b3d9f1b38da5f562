package api

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/memory"
	"github.com/agentnas/nas/outline"
)

// recall is one memory/recall: the Home and commit it reads, and the
// notes it has read so far (each read through the door once, charged
// once, however often supersession asks about it).
type recall struct {
	h     *Handler
	c     *call
	a     *apiv1.MemoryRecallRequest
	br    string
	head  manifest.CommitID
	home  string
	notes map[string]*readNote // by path; nil: not a note
}

// readNote is a note as read at the recall's commit.
type readNote struct {
	note        *memory.Note
	f           *file
	quarantined bool
}

// memoryRecall answers memory/recall: the Home's notes on the branch's
// last commit that search finds for the query, best first, each read
// through the door (charged and recorded like files/read) and decorated
// with its path, review state, quarantine, what supersedes it and its
// evidence pointer; superseded notes are left out unless asked for, and
// bodies beyond the budget are left out and marked, never cut silently.
func (h *Handler) memoryRecall(ctx context.Context, c *call, a *apiv1.MemoryRecallRequest) (*apiv1.MemoryRecallResponse, error) {
	budget, limit, err := checkRecall(a)
	if err != nil {
		return nil, err
	}
	home, br, head, err := h.homeHead(ctx, c, a.Repo, a.Branch, a.Home)
	if err != nil {
		return nil, err
	}
	r := &recall{h: h, c: c, a: a, br: br, head: head, home: home, notes: map[string]*readNote{}}
	hits, err := r.search(ctx, a.Query, a.IncludeQuarantine)
	if err != nil {
		return nil, err
	}
	out := &apiv1.MemoryRecallResponse{Commit: head.String(), Notes: []apiv1.RecalledNote{}}
	for len(hits) > 0 && len(out.Notes) < limit {
		batch := hits[:min(len(hits), limit-len(out.Notes))]
		hits = hits[len(batch):]
		if err := r.collect(ctx, out, batch); err != nil {
			return nil, err
		}
	}
	fitBudget(out, budget)
	return out, nil
}

// homeHead is what a reading memory call acts on: the Home (a lease may
// name another to read, where its view decides), the branch and its last
// commit.
func (h *Handler) homeHead(ctx context.Context, c *call, repo, branch, named string) (home, br string, head manifest.CommitID, err error) {
	if home, err = homeOf(c, named, true); err != nil {
		return "", "", head, err
	}
	if br, err = h.target(ctx, c, repo, branch); err != nil {
		return "", "", head, err
	}
	b, err := h.b.GetBranch(ctx, repo, br)
	if err != nil {
		return "", "", head, err
	}
	return home, br, b.Head, nil
}

// checkRecall checks a recall's query and bounds, and applies their
// defaults.
func checkRecall(a *apiv1.MemoryRecallRequest) (budget, limit int, err error) {
	if err := required("repo", a.Repo, "query", a.Query); err != nil {
		return 0, 0, err
	}
	switch {
	case a.BudgetTokens < 0 || a.BudgetTokens > apiv1.MaxBudgetTokens:
		return 0, 0, invalid(fmt.Sprintf("budget_tokens must be 0 (the default, %d) to %d", apiv1.DefaultBudgetTokens, apiv1.MaxBudgetTokens))
	case a.Limit < 0:
		return 0, 0, invalid("limit must be positive")
	}
	budget, limit = a.BudgetTokens, min(a.Limit, apiv1.MaxSearchLimit)
	if budget == 0 {
		budget = apiv1.DefaultBudgetTokens
	}
	if limit == 0 {
		limit = apiv1.DefaultSearchLimit
	}
	return budget, limit, nil
}

// search asks the index for the Home's memory files matching query, as
// many as it gives (superseded notes and other files are dropped after).
func (r *recall) search(ctx context.Context, query string, quarantined bool) ([]apiv1.SearchHit, error) {
	q := &apiv1.SearchQueryRequest{Repo: r.a.Repo, Branch: r.br, Query: query, Prefix: r.home + "/" + memory.MemoryDir,
		Limit: apiv1.MaxSearchLimit, IncludeQuarantine: quarantined}
	if !r.head.IsZero() {
		q.Commit = r.head.String()
	}
	res, err := r.h.searchQuery(ctx, r.c, q)
	if err != nil {
		return nil, err
	}
	return res.Hits, nil
}

// read reads the note at path through the door, whole, at the recall's
// commit (charged and recorded like files/read); nil when path is not a
// note of the Home (another memory file, or one that does not parse or
// whose ID is not its name) or the caller may not read it.
func (r *recall) read(ctx context.Context, path string) (*readNote, error) {
	if rn, ok := r.notes[path]; ok {
		return rn, nil
	}
	r.notes[path] = nil
	id, q, ok := memory.ParsePath(r.home, path)
	if !ok {
		return nil, nil
	}
	f, err := r.h.statAt(ctx, r.c, auth.Target{Repo: r.a.Repo, Branch: r.br, Key: path, Commit: r.head.String()}, r.head)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := r.h.charge(ctx, r.c, f, 0, 0); err != nil {
		return nil, err
	}
	if err := r.h.load(ctx, f); err != nil {
		return nil, err
	}
	n, err := memory.Parse(f.data)
	if err != nil || n.ID != id {
		return nil, nil
	}
	r.notes[path] = &readNote{note: n, f: f, quarantined: q}
	return r.notes[path], nil
}

// collect reads the notes of a batch of hits and adds to out those that
// no other note supersedes (all of them with IncludeSuperseded), asking
// the index once for the whole batch.
func (r *recall) collect(ctx context.Context, out *apiv1.MemoryRecallResponse, batch []apiv1.SearchHit) error {
	var got []*readNote
	var scores []float64
	for _, hit := range batch {
		rn, err := r.read(ctx, hit.Path)
		if err != nil {
			return err
		}
		if rn != nil {
			got, scores = append(got, rn), append(scores, hit.Score)
		}
	}
	by, err := r.supersededBy(ctx, got)
	if err != nil {
		return err
	}
	for i, rn := range got {
		if b := by[rn.note.ID]; len(b) == 0 || r.a.IncludeSuperseded {
			out.Notes = append(out.Notes, recalled(rn, scores[i], b))
		}
	}
	return nil
}

// supersededBy maps the IDs of notes to the IDs of the Home's notes that
// supersede them: found by one search of the Home for all the IDs, which
// a superseding note's front matter holds, and confirmed by parsing.
// Quarantined notes are not searched: a note from a tainted session may
// not hide a note that is not (else one poisoned note could silence the
// truth), though it is recalled beside it.
func (r *recall) supersededBy(ctx context.Context, notes []*readNote) (map[string][]string, error) {
	by := map[string][]string{}
	if len(notes) == 0 {
		return by, nil
	}
	ids := make([]string, len(notes))
	for i, rn := range notes {
		ids[i] = rn.note.ID
	}
	hits, err := r.search(ctx, strings.Join(ids, " "), false)
	if err != nil {
		return nil, err
	}
	for _, hit := range hits {
		rn, err := r.read(ctx, hit.Path)
		if err != nil {
			return nil, err
		}
		if rn == nil {
			continue
		}
		for _, id := range rn.note.Supersedes {
			if id != rn.note.ID && slices.Contains(ids, id) && !slices.Contains(by[id], rn.note.ID) {
				by[id] = append(by[id], rn.note.ID)
			}
		}
	}
	for _, b := range by {
		slices.Sort(b)
	}
	return by, nil
}

// recalled decorates a note read for the answer; its evidence is the
// whole file at the commit.
func recalled(rn *readNote, score float64, by []string) apiv1.RecalledNote {
	return apiv1.RecalledNote{Note: noteOut(rn.note), Path: rn.f.t.Key, Quarantined: rn.quarantined, SupersededBy: by,
		Score: score, Evidence: rn.f.evidenceOf(1, rn.f.lines.Count())}
}

// fitBudget keeps the bodies of the best notes while their tokens (as
// files/read counts them, ceil(bytes/4)) fit budget; from the first that
// does not fit on, notes come without their body and say so, and so does
// the answer.
func fitBudget(out *apiv1.MemoryRecallResponse, budget int) {
	for i := range out.Notes {
		n := &out.Notes[i]
		t := outline.Tokens(n.Body)
		if out.Truncated || out.Tokens+t > budget {
			n.Body, n.Truncated, out.Truncated = "", true, true
			continue
		}
		out.Tokens += t
	}
}
