package mcpserver_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/mcpserver"
)

// TestBranchTool: nas_branch checkpoints and restores the lease's branch
// without losing the state it leaves, and forks it for a sub-agent whose
// child lease works on the fork alone.
func TestBranchTool(t *testing.T) {
	w := newWorld(t)
	var lr apiv1.LeaseResponse
	w.do(t, apiv1.LeaseCreateRequest{Repo: repo, Role: "agent", Run: "branching", ForkFrom: "main", TTL: "1h",
		View: []lease.Rule{{Path: "docs/**", Actions: []lease.Action{lease.List, lease.Read, lease.Write, lease.Delete, lease.Propose}},
			{Path: "ref/**", Actions: []lease.Action{lease.List, lease.Read}}}}, &lr)
	l := lr.Lease
	cs := w.session(t, l)
	write := func(path, content string) {
		t.Helper()
		if msg := call(t, cs, "nas_write", map[string]any{"path": path, "content": content}, nil); msg != "" {
			t.Fatal(msg)
		}
	}
	write("docs/a.md", "first\n")
	var cp mcpserver.BranchOutput
	if msg := call(t, cs, "nas_branch", map[string]any{"action": "checkpoint", "name": "start"}, &cp); msg != "" {
		t.Fatal(msg)
	}
	if cp.Checkpoint == nil || cp.Checkpoint.By != l.ID || cp.Head != cp.Checkpoint.Commit || len(cp.Checkpoints) != 1 {
		t.Fatalf("checkpoint: %+v", cp)
	}
	write("docs/b.md", "second\n")
	before := cp.Head
	var r mcpserver.BranchOutput
	if msg := call(t, cs, "nas_branch", map[string]any{"action": "restore", "name": "start"}, &r); msg != "" {
		t.Fatal(msg)
	}
	if r.Restored == "" || r.Head != r.Restored || r.Restored == before {
		t.Fatalf("restore: %+v", r)
	}
	wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "docs/b.md"})
	// Going back over what the lease may not undo is refused: a lease
	// without delete cannot restore away a file.
	write("docs/d.md", "new\n")
	nodel := w.session(t, w.lease(t, "branching", lease.Budgets{})) // the same run, so the same branch
	wantRefused(t, nodel, "AccessDenied", "nas_branch", map[string]any{"action": "restore", "name": "start"})
	if msg := call(t, cs, "nas_branch", map[string]any{"action": "restore", "name": "start"}, nil); msg != "" {
		t.Fatal(msg)
	}
	// Nothing is lost: the state before the restore is still in history.
	var log apiv1.CommitLogResponse
	w.do(t, apiv1.CommitLogRequest{Repo: repo, Ref: l.Branch}, &log)
	if !slices.ContainsFunc(log.Commits, func(c apiv1.Commit) bool { return c.Message == "nas_write docs/b.md" }) {
		t.Fatalf("the commit restore went back from is gone: %+v", log.Commits)
	}
	wantRefused(t, cs, "NotFound", "nas_branch", map[string]any{"action": "restore", "name": "never"})
	wantRefused(t, cs, "InvalidArgument", "nas_branch", map[string]any{"action": "checkpoint"})
	if msg := call(t, cs, "nas_branch", map[string]any{"action": "rename", "name": "x"}, nil); msg == "" {
		t.Fatal("an unknown action was accepted")
	}
	t.Run("fork", func(t *testing.T) { testFork(t, w, cs, l) })
}

func testFork(t *testing.T, w *world, cs *mcp.ClientSession, l apiv1.Lease) {
	var f mcpserver.BranchOutput
	args := map[string]any{"action": "create", "name": "try", "paths": []string{"docs/**"},
		"actions": []string{"list", "read", "write", "propose"}, "ttl": "10m", "purpose": "try another wording"}
	if msg := call(t, cs, "nas_branch", args, &f); msg != "" {
		t.Fatal(msg)
	}
	if f.Fork == nil || f.Fork.Branch != l.Branch+"/try" || f.Fork.SecretAccessKey == "" || f.Fork.Parent == nil || *f.Fork.Parent != l.ID {
		t.Fatalf("fork: %+v", f.Fork)
	}
	sub := w.session(t, f.Fork.Lease)
	var got apiv1.FileReadResponse
	if msg := call(t, sub, "nas_read", map[string]any{"path": "docs/a.md"}, &got); msg != "" || got.Content != "first\n" {
		t.Fatalf("the fork reads %q (%s)", got.Content, msg)
	}
	if msg := call(t, sub, "nas_write", map[string]any{"path": "docs/c.md", "content": "on the fork\n"}, nil); msg != "" {
		t.Fatal(msg)
	}
	wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "docs/c.md"}) // the parent's branch is untouched
	var p mcpserver.ProposeOutput
	if msg := call(t, sub, "nas_propose", map[string]any{"intent": "the other wording"}, &p); msg != "" || p.Proposal.Into != l.Branch {
		t.Fatalf("the fork proposes into %q, want its parent's branch %s (%s)", p.Proposal.Into, l.Branch, msg)
	}
	wantRefused(t, sub, "NotFound", "nas_propose", map[string]any{"intent": "straight to main", "into": "main"})

	// Never wider than the parent, never another branch, never unbounded.
	wantRefused(t, cs, "InvalidArgument", "nas_branch", map[string]any{"action": "create", "name": "a/b"})
	if msg := call(t, cs, "nas_branch", map[string]any{"action": "create", "name": "wide", "paths": []string{"secret/**"}, "actions": []string{"read"}}, nil); !strings.Contains(msg, "not granted by the parent") {
		t.Fatalf("a wider fork answers %q", msg)
	}
	for i := 1; i < 16; i++ {
		if msg := call(t, cs, "nas_branch", map[string]any{"action": "create", "name": fmt.Sprintf("f%d", i), "ttl": "1m"}, nil); msg != "" {
			t.Fatalf("fork %d: %s", i, msg)
		}
	}
	wantRefused(t, cs, "QuotaExceeded", "nas_branch", map[string]any{"action": "create", "name": "one-too-many"})
}

// TestWiderAuthority: nas_lease's request waits at a gate; the path
// exists for the lease only after a person approves.
func TestWiderAuthority(t *testing.T) {
	w := newWorld(t)
	l := w.lease(t, "widen", lease.Budgets{})
	cs := w.session(t, l)
	wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "secret/keys.md"})
	var out mcpserver.LeaseOutput
	args := map[string]any{"request": map[string]any{"paths": []string{"secret/keys.md"}, "actions": []string{"read"}, "reason": "the key list is cited"}}
	if msg := call(t, cs, "nas_lease", args, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Request == nil || out.Request.Status != "pending" || !strings.Contains(out.Waiting, out.Request.ID) {
		t.Fatalf("request: %+v %q", out.Request, out.Waiting)
	}
	wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "secret/keys.md"})
	w.do(t, apiv1.GateApproveRequest{GateID: out.Request.ID}, nil)
	var got apiv1.FileReadResponse
	if msg := call(t, cs, "nas_read", map[string]any{"path": "secret/keys.md"}, &got); msg != "" || !strings.Contains(got.Content, "never shown") {
		t.Fatalf("after approval: %q %s", got.Content, msg)
	}
	wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "secret/other.md"})
}

// TestForgetRequestTool: nas_lease's forget waits at a gate; the file
// is there until a person approves, gone after.
func TestForgetRequestTool(t *testing.T) {
	w := newWorld(t)
	l := w.lease(t, "forgetful", lease.Budgets{})
	cs := w.session(t, l)
	var out mcpserver.LeaseOutput
	args := map[string]any{"forget": map[string]any{"paths": []string{"docs/guide.md"}, "reason": "it quotes a customer"}}
	if msg := call(t, cs, "nas_lease", args, &out); msg != "" {
		t.Fatal(msg)
	}
	if out.Forget == nil || out.Forget.Status != "pending" || out.Forget.Card.Action.Op != "forget" || !strings.Contains(out.Waiting, out.Forget.ID) {
		t.Fatalf("forget request: %+v %q", out.Forget, out.Waiting)
	}
	var got apiv1.FileReadResponse
	if msg := call(t, cs, "nas_read", map[string]any{"path": "docs/guide.md"}, &got); msg != "" {
		t.Fatalf("before approval: %s", msg)
	}
	w.do(t, apiv1.GateApproveRequest{GateID: out.Forget.ID}, nil)
	wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "docs/guide.md"})
}
