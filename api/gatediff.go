package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// gate/diff: the line diff of one key of a merge's card, which the
// control room shows under the card. It reads the key at the proposal's
// two heads (old: the target, new: the source), never the branches as
// they are now, so it shows what an approval would merge. It is the
// owner's: a lease learns a card's lines through gate/list alone.

// gateDiff answers gate/diff.
func (h *Handler) gateDiff(ctx context.Context, c *call, a *apiv1.GateDiffRequest) (*apiv1.GateDiffResponse, error) {
	if err := h.needGates(); err != nil {
		return nil, err
	}
	if err := required("gate_id", a.GateID, "path", a.Path); err != nil {
		return nil, err
	}
	g, err := h.gates.GetGate(ctx, a.GateID)
	if err != nil {
		return nil, gateError(err)
	}
	kind := ""
	for _, l := range g.Card.Action.Changes {
		if l.Key == a.Path {
			kind = l.Kind
		}
	}
	if kind == "" || g.Proposal == "" {
		return nil, notFound(fmt.Sprintf("%q is not on the card of gate %s", a.Path, a.GateID))
	}
	p, err := h.gates.GetProposal(ctx, g.Proposal)
	if err != nil {
		return nil, gateError(err)
	}
	old, err := h.diffSide(ctx, p.Repo, p.TargetHead, a.Path)
	if err != nil {
		return nil, err
	}
	cur, err := h.diffSide(ctx, p.Repo, p.SourceHead, a.Path)
	if err != nil {
		return nil, err
	}
	return diffOut(a.Path, kind, old, cur), nil
}

// side is one side of a key's diff as read: its entry (nil: absent), its
// bytes when they were read, and why they were not.
type side struct {
	e      *manifest.Entry
	data   []byte
	reason string
}

// diffSide reads key at commit of repo, its bytes only when at most
// apiv1.MaxDiffBytes and not sealed.
func (h *Handler) diffSide(ctx context.Context, repo, commit, key string) (side, error) {
	id, err := manifest.ParseCommitID(commit)
	if err != nil {
		return side{}, fmt.Errorf("proposal commit %q: %w", commit, err)
	}
	e, err := h.b.GetAt(ctx, repo, id, key)
	if errors.Is(err, branch.ErrNoSuchKey) {
		return side{}, nil
	}
	if err != nil {
		return side{}, err
	}
	if e.Size > apiv1.MaxDiffBytes {
		return side{e: e, reason: fmt.Sprintf("larger than %d bytes", apiv1.MaxDiffBytes)}, nil
	}
	content, err := h.contentOf(ctx, e)
	if err != nil {
		return side{}, err
	}
	if content == nil {
		return side{e: e, data: []byte{}}, nil
	}
	if content.Seal != nil {
		return side{e: e, reason: "sealed content is not shown"}, nil
	}
	var buf bytes.Buffer
	if err := h.b.ReadContent(ctx, &buf, content, 0, e.Size); err != nil {
		return side{}, fmt.Errorf("read %s at %s: %w", key, commit, err)
	}
	return side{e: e, data: buf.Bytes()}, nil
}

// diffOut builds the answer: a unified diff when both sides are text.
func diffOut(path, kind string, old, cur side) *apiv1.GateDiffResponse {
	out := &apiv1.GateDiffResponse{Path: path, Kind: kind, Old: sideOut(old), New: sideOut(cur)}
	for _, s := range []side{old, cur} {
		switch {
		case s.e == nil:
		case s.reason != "":
			out.Reason = s.reason
		case !isText(s.data):
			out.Reason = "binary content"
		}
	}
	if out.Reason != "" {
		return out
	}
	d := difflib.UnifiedDiff{A: difflib.SplitLines(string(old.data)), B: difflib.SplitLines(string(cur.data)),
		FromFile: "a/" + path, ToFile: "b/" + path, Context: 3}
	text, err := difflib.GetUnifiedDiffString(d)
	if err != nil {
		out.Reason = "the diff could not be made: " + err.Error()
		return out
	}
	out.Text, out.Unified = true, text
	return out
}

// sideOut describes a side: its size, ETag and, when read, SHA-256.
func sideOut(s side) apiv1.DiffSide {
	if s.e == nil {
		return apiv1.DiffSide{}
	}
	out := apiv1.DiffSide{Present: true, Size: s.e.Size, ETag: s.e.ETag}
	if s.data != nil || s.e.Size == 0 && s.reason == "" {
		sum := sha256.Sum256(s.data)
		out.SHA256 = hex.EncodeToString(sum[:])
	}
	return out
}

// isText reports whether b is UTF-8 with no NUL byte: what a line diff
// can show.
func isText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}
