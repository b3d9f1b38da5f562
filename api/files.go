package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/outline"
)

// Budgeted reads (files/read) and evidence pointers (files/dereference,
// files/verify). Each is a read through the door like an S3 GET: the
// caller needs read on the path (outside its view the path does not
// exist), the bytes the answer is made of are charged to its read budget
// and recorded in its run's read manifest. A read is of a commit: the
// branch's last one for files/read (staged changes are not read, so a
// pointer always names content a commit holds), the pointer's for the
// others, which a lease may name only when its branch has seen it.

// file is an object's bytes at a commit, as the door allowed them.
type file struct {
	t      auth.Target
	e      *manifest.Entry
	commit manifest.CommitID
	data   []byte
	lines  *outline.Lines
}

// statAt authorizes a read of t (t.Commit names commit id, which the
// door checks against a lease's branch) and finds the object, of at most
// apiv1.MaxReadBytes; nothing is read or charged yet.
func (h *Handler) statAt(ctx context.Context, c *call, t auth.Target, id manifest.CommitID) (*file, error) {
	if err := h.auth.Authorize(ctx, c.p, lease.Read, t); err != nil {
		return nil, err
	}
	e, err := h.b.GetAt(ctx, t.Repo, id, t.Key)
	if err != nil {
		return nil, err
	}
	if err := h.auth.Ceiling(ctx, c.p, t, e); err != nil {
		return nil, err
	}
	if e.Size > apiv1.MaxReadBytes {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: apiv1.CodeTooLarge,
			Message: fmt.Sprintf("%s is %d bytes; budgeted reads take objects of at most %d (use a ranged GET)", t.Key, e.Size, apiv1.MaxReadBytes)}
	}
	return &file{t: t, e: e, commit: id}, nil
}

// openAt is statAt, then load.
func (h *Handler) openAt(ctx context.Context, c *call, t auth.Target, id manifest.CommitID) (*file, error) {
	f, err := h.statAt(ctx, c, t, id)
	if err != nil {
		return nil, err
	}
	return f, h.load(ctx, f)
}

// load reads f's object whole and indexes its lines.
func (h *Handler) load(ctx context.Context, f *file) error {
	content, err := h.contentOf(ctx, f.e)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.Grow(int(f.e.Size))
	if err := h.b.ReadContent(ctx, &buf, content, 0, f.e.Size); err != nil {
		return fmt.Errorf("read %s at %s: %w", f.t.Key, f.commit, err)
	}
	f.data, f.lines = buf.Bytes(), outline.NewLines(buf.Bytes())
	return nil
}

// charge charges the lease for lines start..end of f (0, 0: the whole
// object, which need not be loaded yet) and records the read.
func (h *Handler) charge(ctx context.Context, c *call, f *file, start, end int) (*auth.Charge, error) {
	off, stop := 0, int(f.e.Size)
	if start > 0 {
		off, stop, _ = f.lines.Span(start, end)
	}
	var rs []auth.Range
	if stop > off {
		rs = append(rs, auth.Range{Off: int64(off), Len: int64(stop - off)})
	}
	return h.auth.Read(ctx, c.p, f.t, f.e, rs...)
}

// evidenceOf is the pointer to lines start..end of f, with their hash.
func (f *file) evidenceOf(start, end int) apiv1.Evidence {
	b, _ := f.lines.Slice(start, end)
	p := evidence.Pointer{Repo: f.t.Repo, Path: f.t.Key, Commit: f.commit.String(), Start: start, End: end}
	return apiv1.Evidence{Pointer: p.String(), SHA256: evidence.Hash(b)}
}

// fileRead answers files/read: the finest view asked for that fits the
// budget (see choose), charged for the bytes it was made from. A read of
// the whole file (no range or section) costs the whole object whatever
// view fits, so it is charged before the bytes are read: a lease whose
// budget does not cover them costs the gateway no read.
func (h *Handler) fileRead(ctx context.Context, c *call, a *apiv1.FileReadRequest) (*apiv1.FileReadResponse, error) {
	budget, err := checkRead(a)
	if err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	b, err := h.b.GetBranch(ctx, a.Repo, br)
	if err != nil {
		return nil, err
	}
	f, err := h.statAt(ctx, c, auth.Target{Repo: a.Repo, Branch: br, Key: a.Path, Commit: b.Head.String()}, b.Head)
	if err != nil {
		return nil, err
	}
	whole := a.Range == nil && a.Section == ""
	var paid *auth.Charge
	if whole {
		if paid, err = h.charge(ctx, c, f, 0, 0); err != nil {
			return nil, err
		}
	}
	if err := h.load(ctx, f); err != nil {
		paid.Refund(ctx)
		return nil, err
	}
	v, err := choose(f, a, budget)
	if err == nil && !whole {
		_, err = h.charge(ctx, c, f, v.start, v.end)
	}
	if err != nil {
		return nil, err
	}
	return readResponse(f, v), nil
}

// readResponse is the answer of a read of f as view v, with its evidence:
// a view made from the whole file cites the whole file.
func readResponse(f *file, v view) *apiv1.FileReadResponse {
	out := &apiv1.FileReadResponse{View: v.name, Tokens: outline.Tokens(v.content), Truncated: v.truncated, Content: v.content,
		Evidence: []apiv1.Evidence{}, Commit: f.commit.String(), Lines: f.lines.Count(), Note: v.note}
	switch n := f.lines.Count(); {
	case n > 0 && v.start == 0:
		out.Evidence = append(out.Evidence, f.evidenceOf(1, n))
	case n > 0:
		out.Evidence = append(out.Evidence, f.evidenceOf(v.start, v.end))
	}
	return out
}
