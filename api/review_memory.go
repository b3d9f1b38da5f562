package api

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/memory"
)

// memoryReview answers memory/review (the owner's): the Home's
// quarantined notes on the branch, and the release of those named. A
// released note keeps its ID, front matter and body, is marked reviewed,
// and moves from quarantine/ to notes/ in one commit; its labels become
// reviewed, which is how external content is declassified.
func (h *Handler) memoryReview(ctx context.Context, c *call, a *apiv1.MemoryReviewRequest) (*apiv1.MemoryReviewResponse, error) {
	if err := required("repo", a.Repo, "home", a.Home); err != nil {
		return nil, err
	}
	if err := memory.CheckHome(a.Home); err != nil {
		return nil, invalid(err.Error())
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	waiting, err := h.quarantined(ctx, c, a.Repo, br, a.Home)
	if err != nil {
		return nil, err
	}
	out := &apiv1.MemoryReviewResponse{Home: a.Home, Quarantined: []apiv1.QuarantinedNote{}, Released: []string{}}
	for _, q := range waiting {
		if !slices.Contains(a.Release, q.ID) {
			out.Quarantined = append(out.Quarantined, q)
		}
	}
	for _, id := range a.Release {
		i := slices.IndexFunc(waiting, func(q apiv1.QuarantinedNote) bool { return q.ID == id })
		if i < 0 {
			return nil, invalid(fmt.Sprintf("%s is not a quarantined note of %s on %s", id, a.Home, br))
		}
		if err := h.release(ctx, c, auth.Target{Repo: a.Repo, Branch: br, Key: waiting[i].Path}, a.Home, id); err != nil {
			return nil, err
		}
		out.Released = append(out.Released, id)
	}
	if len(out.Released) > 0 {
		cr, err := h.commitCreate(ctx, c, &apiv1.CommitCreateRequest{Repo: a.Repo, Branch: br,
			Message: fmt.Sprintf("memory review: release %d note(s) of %s", len(out.Released), a.Home)})
		if err != nil {
			return nil, err
		}
		out.Commit = cr.Commit.ID
	}
	return out, nil
}

// maxNoteFile bounds a file read as a note: a body and a little front
// matter. A lease can put anything under its Home; nothing larger is
// loaded whole.
const maxNoteFile = 2 * memory.MaxBody

// quarantined lists the notes of home's quarantine on br (staged
// included), at most one listing page.
func (h *Handler) quarantined(ctx context.Context, c *call, repo, br, home string) ([]apiv1.QuarantinedNote, error) {
	res, err := h.b.List(ctx, repo, br, branch.ListOptions{Prefix: home + "/" + memory.QuarantineDir, MaxKeys: apiv1.MaxLimit})
	if err != nil {
		return nil, err
	}
	var out []apiv1.QuarantinedNote
	for _, o := range res.Objects {
		if _, q, ok := memory.ParsePath(home, o.Key); !ok || !q || o.Entry.Size > maxNoteFile {
			continue // not a quarantined note (a larger file is left for a person to look at)
		}
		f := &file{t: auth.Target{Repo: repo, Branch: br, Key: o.Key}, e: o.Entry}
		if err := h.load(ctx, f); err != nil {
			return nil, err
		}
		n, err := memory.Parse(f.data)
		if err != nil {
			continue // not a note: left for a person to look at by hand
		}
		out = append(out, apiv1.QuarantinedNote{Note: noteOut(n), Path: o.Key})
	}
	return out, nil
}

// release moves the quarantined note id at t to home's notes, reviewed.
func (h *Handler) release(ctx context.Context, c *call, t auth.Target, home, id string) error {
	e, err := h.b.Get(ctx, t.Repo, t.Branch, t.Key)
	if err != nil {
		return err
	}
	if e.Size > maxNoteFile {
		return invalid(t.Key + " is too large to be a note")
	}
	f := &file{t: t, e: e}
	if err := h.load(ctx, f); err != nil {
		return err
	}
	n, err := memory.Parse(f.data)
	if err != nil {
		return invalid(err.Error())
	}
	n.Reviewed = true
	data, err := memory.Render(n)
	if err != nil {
		return invalid(err.Error())
	}
	l, err := h.auth.Effective(ctx, c.p, t.Repo, t.Key, e)
	if err != nil {
		return err
	}
	l.Reviewed = true
	dst := auth.Target{Repo: t.Repo, Branch: t.Branch, Key: memory.NotePath(home, id)}
	if err := h.storeNote(ctx, c, dst, data, &l); err != nil {
		return err
	}
	_, err = h.b.Delete(ctx, t.Repo, t.Branch, t.Key, branch.Condition{IfMatch: e.ETag, By: c.p.Writer()})
	return err
}
