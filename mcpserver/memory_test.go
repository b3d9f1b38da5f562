package mcpserver_test

import (
	"io"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
)

// TestMemoryTools: nas_remember writes a plain note into the role's Home,
// nas_recall finds it; a newer note supersedes it; a lease whose view
// leaves out the Home can do neither.
func TestMemoryTools(t *testing.T) {
	w := newWorld(t)
	var lr apiv1.LeaseResponse
	w.do(t, apiv1.LeaseCreateRequest{Repo: repo, Role: "agent", Run: "memory", ForkFrom: "main", TTL: "1h",
		View: []lease.Rule{{Path: "agents/agent/**", Actions: []lease.Action{lease.List, lease.Read, lease.Write}},
			{Path: "docs/**", Actions: []lease.Action{lease.List, lease.Read}}}}, &lr)
	l := lr.Lease
	cs := w.session(t, l)

	var first apiv1.MemoryRememberResponse
	if msg := call(t, cs, "nas_remember", map[string]any{"kind": "semantic", "subject": "customer/acme",
		"body": "Acme renewed for 12 months; the champion is Dana."}, &first); msg != "" {
		t.Fatal(msg)
	}
	if !strings.HasPrefix(first.Path, "agents/agent/memory/") || first.Note.Origin != "agent" || first.Note.Reviewed || first.Commit == "" {
		t.Fatalf("remembered %+v", first)
	}
	// L2.2: the note is a plain file, readable with any S3 client.
	var raw []byte
	err := w.owner.Get(t.Context(), client.Object{Repo: repo, Branch: l.Branch, Key: first.Path}, "", 0, -1, func(r io.Reader, _ client.Info) (err error) {
		raw, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "---\n") || !strings.Contains(string(raw), "subject: customer/acme") || !strings.Contains(string(raw), "champion is Dana") {
		t.Fatalf("the note as a file:\n%s", raw)
	}
	var second apiv1.MemoryRememberResponse
	if msg := call(t, cs, "nas_remember", map[string]any{"kind": "semantic", "subject": "customer/acme",
		"body": "Acme renewed for 24 months; the champion moved from Dana to Luis.", "supersedes": []string{first.Note.ID}}, &second); msg != "" {
		t.Fatal(msg)
	}
	var rec apiv1.MemoryRecallResponse
	if msg := call(t, cs, "nas_recall", map[string]any{"query": "acme champion"}, &rec); msg != "" {
		t.Fatal(msg)
	}
	if len(rec.Notes) != 1 || rec.Notes[0].ID != second.Note.ID || rec.Notes[0].Evidence.Pointer == "" {
		t.Fatalf("recall %+v", rec.Notes)
	}
	if msg := call(t, cs, "nas_recall", map[string]any{"query": "acme champion", "include_superseded": true}, &rec); msg != "" || len(rec.Notes) != 2 {
		t.Fatalf("recall with superseded: %+v %s", rec.Notes, msg)
	}
	wantRefused(t, cs, "InvalidArgument", "nas_remember", map[string]any{"kind": "semantic", "subject": "x", "body": "y",
		"sources": []string{"nas://kb1/docs/none.md@0000000000000000000000000000000000000000000000000000000000000000#L1-L2"}})

	// A lease whose view leaves out the Home.
	other := w.session(t, w.lease(t, "no-home", lease.Budgets{}))
	if msg := call(t, other, "nas_remember", map[string]any{"kind": "semantic", "subject": "x", "body": "y"}, nil); !strings.HasPrefix(msg, "NotFound: ") {
		t.Fatalf("remember outside the view answers %q", msg)
	}
	var hidden apiv1.MemoryRecallResponse
	if msg := call(t, other, "nas_recall", map[string]any{"query": "acme"}, &hidden); msg != "" && !strings.HasPrefix(msg, "NotFound: ") || len(hidden.Notes) != 0 {
		t.Fatalf("recall outside the view: %+v %q", hidden.Notes, msg)
	}
}
