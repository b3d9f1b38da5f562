package api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/memory"
	"github.com/agentnas/nas/secret"
)

// Agent memory (memory/remember, memory/recall). A note is a plain file
// of a Home (package memory) and every access to it goes through the
// door as a PUT or a budgeted read would: remember is authorized as a PUT
// of the note's key, charged to the write budget and committed; recall
// reads each note like files/read, charged and recorded. Nothing here
// keeps state: search is the index's, the notes are the truth.

// homeOf is the Home a call acts on. A lease's is its role's; it may name
// another only to read (others), where its view decides. The owner must
// name one.
func homeOf(c *call, named string, others bool) (string, error) {
	if l := c.p.Lease; l != nil {
		if l.Role == "" {
			return "", invalid("the lease has no role, so it has no Home")
		}
		own := memory.Home(l.Role)
		if named == "" || named == own {
			return own, nil
		}
		if !others {
			return "", denied(fmt.Sprintf("a lease remembers into its role's Home, %s, not %s", own, named))
		}
	}
	if named == "" {
		return "", invalid("home is required (agents/ROLE)")
	}
	if err := memory.CheckHome(named); err != nil {
		return "", invalid(err.Error())
	}
	return named, nil
}

// memoryRemember answers memory/remember: a new note in the Home, written
// through the door as a PUT of its key would be, resting on sources that
// exist at their commits and superseding notes that exist in the same
// Home (which are never modified), then committed.
func (h *Handler) memoryRemember(ctx context.Context, c *call, a *apiv1.MemoryRememberRequest) (*apiv1.MemoryRememberResponse, error) {
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	home, err := homeOf(c, a.Home, false)
	if err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	n, err := newNote(c, a)
	if err != nil {
		return nil, err
	}
	t := auth.Target{Repo: a.Repo, Branch: br, Key: memory.NotePath(home, n.ID)}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, t); err != nil {
		return nil, err
	}
	srcs, err := h.checkSources(ctx, c, n.Sources)
	if err != nil {
		return nil, err
	}
	q, err := h.quarantine(ctx, c, n.Sources)
	if err != nil {
		return nil, err
	}
	if q {
		t.Key = memory.QuarantinePath(home, n.ID)
		if err := h.auth.Authorize(ctx, c.p, lease.Write, t); err != nil {
			return nil, err
		}
	}
	if err := h.checkSupersedes(ctx, c, t, home, n.Supersedes); err != nil {
		return nil, err
	}
	data, err := memory.Render(n)
	if err != nil {
		return nil, invalid(err.Error())
	}
	l, err := h.auth.DerivedLabel(ctx, c.p, srcs...)
	if err != nil {
		return nil, err
	}
	sc := secret.New()
	sc.Write(data)
	if sc.Found() {
		s := label.Raise(label.Of(l), "", label.Secret)
		l = &s
	}
	if err := h.storeNote(ctx, c, t, data, l); err != nil {
		return nil, err
	}
	msg := a.Intent
	if msg == "" {
		msg = "remember " + t.Key
	}
	cr, err := h.commitCreate(ctx, c, &apiv1.CommitCreateRequest{Repo: a.Repo, Branch: br, Message: msg})
	if err != nil {
		return nil, err
	}
	return &apiv1.MemoryRememberResponse{Note: noteOut(n), Path: t.Key, Quarantined: q, Commit: cr.Commit.ID}, nil
}

// newNote is the note a request asks for, with its provenance: origin
// agent and unreviewed for a lease, origin owner and reviewed for the
// owner (who is the reviewer); valid from now unless it says otherwise.
func newNote(c *call, a *apiv1.MemoryRememberRequest) (*memory.Note, error) {
	n := &memory.Note{ID: memory.NewID(), Kind: a.Kind, Subject: a.Subject, ValidFrom: a.ValidFrom, Confidence: memory.DefaultConfidence,
		Origin: memory.OriginAgent, Sources: a.Sources, Supersedes: a.Supersedes, Body: a.Body}
	if c.p.IsOwner() {
		n.Origin, n.Reviewed = memory.OriginOwner, true
	}
	if n.ValidFrom == "" {
		n.ValidFrom = c.p.Now().UTC().Format(time.RFC3339)
	}
	if a.ValidTo != "" {
		n.ValidTo = &a.ValidTo
	}
	if a.Confidence != nil {
		n.Confidence = *a.Confidence
	}
	if err := n.Validate(); err != nil {
		return nil, invalid(err.Error())
	}
	return n, nil
}

// quarantine decides whether a note goes to quarantine/ rather than
// notes/: it does when the session writing it is tainted, having read
// unreviewed external content (sources included, which checkSources has
// just read), or when it rests on a quarantined note; it is then
// recallable but never autoloaded until a person reviews it.
func (h *Handler) quarantine(ctx context.Context, c *call, sources []string) (bool, error) {
	for _, s := range sources {
		if p, err := evidence.Parse(s); err == nil && memory.InQuarantine(p.Path) {
			return true, nil
		}
	}
	t, err := h.auth.Taint(ctx, c.p)
	return t.External(), err
}

// checkSources verifies that each source's lines exist at its commit, by
// reading them through the door like files/verify (charged and recorded):
// a pointer that names nothing, or nothing the caller may see, is an
// invalid argument naming it.
func (h *Handler) checkSources(ctx context.Context, c *call, sources []string) ([]auth.Source, error) {
	var srcs []auth.Source
	for _, s := range sources {
		f, p, err := h.openPointer(ctx, c, s)
		if isNotFound(err) {
			return nil, invalid(fmt.Sprintf("source %s: no such file at that commit", s))
		}
		if err != nil {
			return nil, err
		}
		if _, ok := f.lines.Slice(p.Start, p.End); !ok {
			return nil, invalid(fmt.Sprintf("source %s: %s", s, pastEnd(f, p)))
		}
		if _, err := h.charge(ctx, c, f, p.Start, p.End); err != nil {
			return nil, err
		}
		srcs = append(srcs, auth.Source{Target: f.t, Entry: f.e})
	}
	return srcs, nil
}

// checkSupersedes checks that each superseded ID names a note of home on
// the branch (in notes/ or quarantine/) the caller may read; the open is
// recorded. The old note is never touched.
func (h *Handler) checkSupersedes(ctx context.Context, c *call, t auth.Target, home string, ids []string) error {
	for _, id := range ids {
		e, key, err := h.findNote(ctx, t.Repo, t.Branch, home, id)
		if err == nil {
			st := auth.Target{Repo: t.Repo, Branch: t.Branch, Key: key}
			if err = h.auth.Probe(ctx, c.p, st); err == nil {
				_, err = h.auth.Read(ctx, c.p, st, e)
			}
		}
		if isNotFound(err) {
			return invalid(fmt.Sprintf("supersedes %s: no such note in %s", id, home))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// findNote finds note id of home on a branch, in notes/ or quarantine/.
func (h *Handler) findNote(ctx context.Context, repo, br, home, id string) (*manifest.Entry, string, error) {
	var err error
	for _, key := range []string{memory.NotePath(home, id), memory.QuarantinePath(home, id)} {
		var e *manifest.Entry
		if e, err = h.b.Get(ctx, repo, br, key); err == nil {
			return e, key, nil
		}
	}
	return nil, "", err
}

// storeNote stores data as a new object at t as a PUT would (charged to
// the write budget first, an ETag that is its MD5), refusing to replace
// anything: a note is never overwritten.
func (h *Handler) storeNote(ctx context.Context, c *call, t auth.Target, data []byte, l *label.Label) error {
	class, domain, err := h.auth.Retention(ctx, c.p, t.Repo, t.Key, "", "")
	if err != nil {
		return err
	}
	charge, err := h.auth.Write(ctx, c.p, t, int64(len(data)))
	if err != nil {
		return err
	}
	up := h.b.Chunks().NewUpload()
	defer up.Close()
	refs, _, sl, err := h.b.Ingest(ctx, up, bytes.NewReader(data), nil, domain)
	if err == nil {
		err = up.Sync(ctx)
	}
	if err != nil {
		charge.Refund(ctx)
		return err
	}
	sum := md5.Sum(data)
	e := &manifest.Entry{Size: int64(len(data)), ETag: hex.EncodeToString(sum[:]), ContentType: "text/markdown; charset=utf-8", Label: l, Retention: class}
	ch, rec := e.SetContent(&manifest.Content{Chunks: refs, Seal: sl})
	cond, err := h.auth.Condition(ctx, c.p, t, branch.Condition{IfNoneMatch: "*"})
	if err == nil {
		_, err = h.b.Put(ctx, t.Repo, t.Branch, t.Key, e, cond, up, branch.ContentRecord{Hash: ch, Data: rec})
	}
	if err != nil {
		charge.Refund(ctx)
	}
	return err
}

// isNotFound reports whether err answers NotFound at this edge.
func isNotFound(err error) bool { return err != nil && toError(err).Code == apiv1.CodeNotFound }

// noteOut is a note on the wire, with empty lists rather than null.
func noteOut(n *memory.Note) apiv1.Note {
	j := apiv1.Note(*n)
	if j.Sources == nil {
		j.Sources = []string{}
	}
	if j.Supersedes == nil {
		j.Supersedes = []string{}
	}
	return j
}
