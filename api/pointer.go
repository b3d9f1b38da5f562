package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/outline"
)

// openPointer authorizes and reads the file a pointer names, at its
// commit: for a lease the repository must be its own and the commit one
// its branch has seen (else NotFound, like S3's NoSuchVersion).
func (h *Handler) openPointer(ctx context.Context, c *call, s string) (*file, evidence.Pointer, error) {
	p, err := evidence.Parse(s)
	if err != nil {
		return nil, p, err
	}
	br, err := h.target(ctx, c, p.Repo, "")
	if err != nil {
		return nil, p, err
	}
	// The door checks the commit for a lease (one it cannot parse does
	// not exist for it either); the owner may name any commit of the
	// repository.
	id, err := manifest.ParseCommitID(p.Commit)
	if err != nil && c.p.IsOwner() {
		return nil, p, fmt.Errorf("commit %s: %w", p.Commit, branch.ErrNoSuchVersion)
	}
	f, err := h.openAt(ctx, c, auth.Target{Repo: p.Repo, Branch: br, Key: p.Path, Commit: p.Commit}, id)
	return f, p, err
}

// fileDereference answers files/dereference: the exact lines a pointer
// names, as of its commit however the branch moved since.
func (h *Handler) fileDereference(ctx context.Context, c *call, a *apiv1.FileDereferenceRequest) (*apiv1.FileDereferenceResponse, error) {
	f, p, err := h.openPointer(ctx, c, a.Pointer)
	if err != nil {
		return nil, err
	}
	b, ok := f.lines.Slice(p.Start, p.End)
	if !ok {
		return nil, &Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: apiv1.CodeInvalidRange, Message: pastEnd(f, p)}
	}
	if _, err := h.charge(ctx, c, f, p.Start, p.End); err != nil {
		return nil, err
	}
	return &apiv1.FileDereferenceResponse{Pointer: p.String(), Content: string(b), SHA256: evidence.Hash(b), Tokens: outline.Tokens(string(b))}, nil
}

// fileVerify answers files/verify: whether the pointer's lines exist at
// its commit and hash to the SHA-256 given. It reads them, so it is
// charged like a dereference.
func (h *Handler) fileVerify(ctx context.Context, c *call, a *apiv1.FileVerifyRequest) (*apiv1.FileVerifyResponse, error) {
	want := strings.ToLower(a.SHA256)
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		return nil, invalid("sha256 must be 64 hex digits")
	}
	f, p, err := h.openPointer(ctx, c, a.Pointer)
	if err != nil {
		return nil, err
	}
	b, ok := f.lines.Slice(p.Start, p.End)
	if !ok {
		return &apiv1.FileVerifyResponse{Reason: pastEnd(f, p)}, nil
	}
	if _, err := h.charge(ctx, c, f, p.Start, p.End); err != nil {
		return nil, err
	}
	if got := evidence.Hash(b); got != want {
		return &apiv1.FileVerifyResponse{Reason: fmt.Sprintf("lines %d-%d at %s hash to %s, not %s", p.Start, p.End, p.Commit, got, want)}, nil
	}
	return &apiv1.FileVerifyResponse{Valid: true}, nil
}

// pastEnd says that a pointer's lines are not all in the file.
func pastEnd(f *file, p evidence.Pointer) string {
	return fmt.Sprintf("lines %d-%d: %s has %d lines at %s", p.Start, p.End, p.Path, f.lines.Count(), p.Commit)
}
