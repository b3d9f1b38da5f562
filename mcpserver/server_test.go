package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/mcpserver"
	"github.com/agentnas/nas/nastest"
)

// world is a gateway whose repository "kb1" holds, on main, files in
// docs/ and ref/ that leases see and in secret/ that they do not.
type world struct {
	srv   *nastest.Server
	owner *client.Client
}

const repo = "kb1"

func newWorld(t *testing.T) *world {
	t.Helper()
	srv := nastest.Start(t)
	w := &world{srv: srv, owner: client.New(client.Config{Endpoint: srv.Endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}})}
	ctx := t.Context()
	unprotected := false
	w.do(t, apiv1.RepoCreateRequest{Repo: repo, Protected: &unprotected}, nil)
	for k, v := range map[string]string{
		"docs/guide.md":  "# Guide\n\nHow to use it.\n\n## Setup\n\nInstall.\n",
		"docs/big.md":    bigMarkdown(1 << 20),
		"ref/readme.txt": "reference, read-only\n",
		"secret/keys.md": "# Keys\n\nnever shown\n",
	} {
		b := strings.NewReader(v)
		if _, err := w.owner.Put(ctx, client.Object{Repo: repo, Branch: "main", Key: k}, b, b.Size(), client.PutOptions{}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	w.do(t, apiv1.CommitCreateRequest{Repo: repo, Branch: "main", Message: "seed"}, nil)
	w.do(t, apiv1.RolePutRequest{Role: lease.Role{Name: "agent", Repo: repo,
		View: []lease.Rule{{Path: "**", Actions: lease.Actions}}}}, nil)
	return w
}

// bigMarkdown is a Markdown file of about n bytes with many sections.
func bigMarkdown(n int) string {
	var b strings.Builder
	b.WriteString("# Big\n\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "## Part %d\n\n%s\n\n", i, strings.Repeat("Some words of the part. ", 40))
	}
	return b.String()
}

func (w *world) do(t *testing.T, req apiv1.Request, resp any) {
	t.Helper()
	if err := w.owner.Do(t.Context(), req, resp); err != nil {
		t.Fatalf("%s: %v", req.Op(), err)
	}
}

// lease issues a lease on a run branch forked from main: read and write
// in docs/, read in ref/, listing everywhere it sees.
func (w *world) lease(t *testing.T, run string, b lease.Budgets) apiv1.Lease {
	t.Helper()
	var out apiv1.LeaseResponse
	w.do(t, apiv1.LeaseCreateRequest{Repo: repo, Role: "agent", Run: run, ForkFrom: "main", TTL: "1h", Budgets: b,
		View: []lease.Rule{{Path: "docs/**", Actions: []lease.Action{lease.List, lease.Read, lease.Write, lease.Propose}},
			{Path: "ref/**", Actions: []lease.Action{lease.List, lease.Read}}}}, &out)
	return out.Lease
}

// session connects an SDK client to a server acting as l, in memory.
func (w *world) session(t *testing.T, l apiv1.Lease) *mcp.ClientSession {
	t.Helper()
	c := client.New(client.Config{Endpoint: w.srv.Endpoint, Credentials: aws.Credentials{AccessKeyID: l.AccessKeyID,
		SecretAccessKey: l.SecretAccessKey, SessionToken: l.SessionToken}})
	s, err := mcpserver.New(mcpserver.Options{Client: c, Repo: l.Repo, Branch: l.Branch})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait(); cancel() })
	return cs
}

// call calls a tool and decodes its structured answer into out; it
// returns the text of a tool error ("" when the call succeeded).
func call(t *testing.T, cs *mcp.ClientSession, tool string, args, out any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		if len(res.Content) == 0 {
			t.Fatalf("%s: an error result without text", tool)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", tool, b, err)
		}
	}
	return ""
}

// wantRefused checks that a tool call failed with code.
func wantRefused(t *testing.T, cs *mcp.ClientSession, code, tool string, args any) {
	t.Helper()
	msg := call(t, cs, tool, args, nil)
	if !strings.HasPrefix(msg, code+": ") {
		t.Fatalf("%s %v: want %s, got %q", tool, args, code, msg)
	}
}

func TestTools(t *testing.T) {
	w := newWorld(t)
	l := w.lease(t, "tools", lease.Budgets{BytesRead: 64 << 20})
	cs := w.session(t, l)

	tl, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema == nil || tool.Description == "" {
			t.Errorf("%s has no input schema or description", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"nas_branch", "nas_lease", "nas_list", "nas_propose", "nas_read", "nas_recall", "nas_remember", "nas_search", "nas_write"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	t.Run("list", func(t *testing.T) { testList(t, cs) })
	t.Run("write and read", func(t *testing.T) {
		testWriteRead(t, cs)
		var log apiv1.CommitLogResponse
		w.do(t, apiv1.CommitLogRequest{Repo: repo, Ref: l.Branch, Page: apiv1.Page{Limit: 1}}, &log)
		if len(log.Commits) != 1 || log.Commits[0].Message != "keep notes" || log.Commits[0].Lease != l.ID {
			t.Fatalf("the write's commit is %+v, want the intent as its message", log.Commits)
		}
	})
	t.Run("outline", func(t *testing.T) { testOutline(t, cs) })
	t.Run("refusals", func(t *testing.T) {
		// The schema refuses a view that does not exist before the gateway is asked.
		if msg := call(t, cs, "nas_read", map[string]any{"path": "docs/guide.md", "view": "summary"}, nil); !strings.Contains(msg, "view") {
			t.Fatalf("an unknown view answers %q", msg)
		}
		wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "secret/keys.md"})
		wantRefused(t, cs, "NotFound", "nas_read", map[string]any{"path": "docs/none.md"})
		var hidden mcpserver.ListOutput
		if msg := call(t, cs, "nas_list", map[string]any{"path": "secret"}, &hidden); msg != "" || len(hidden.Entries)+len(hidden.Dirs) != 0 {
			t.Fatalf("a hidden directory lists %+v (%s)", hidden, msg)
		}
		wantRefused(t, cs, "AccessDenied", "nas_write", map[string]any{"path": "ref/new.txt", "content": "no"})
		wantRefused(t, cs, "NotFound", "nas_write", map[string]any{"path": "secret/new.txt", "content": "no"})
	})
	t.Run("lease", func(t *testing.T) { testLeaseBudgets(t, cs) })
	t.Run("propose", func(t *testing.T) {
		var p mcpserver.ProposeOutput
		if msg := call(t, cs, "nas_propose", map[string]any{"intent": "add notes"}, &p); msg != "" {
			t.Fatal(msg)
		}
		if p.Proposal.ID == "" || p.Proposal.Into != "main" {
			t.Fatalf("proposal %+v", p.Proposal)
		}
		// The write above is the change; the default policy sends a merge
		// into main to a person.
		if p.Proposal.Status != "pending" || !strings.Contains(p.Waiting, "waiting at gate "+p.Proposal.GateID) {
			t.Fatalf("proposal %s is %s, says %q", p.Proposal.ID, p.Proposal.Status, p.Waiting)
		}
	})
}

func testList(t *testing.T, cs *mcp.ClientSession) {
	var root mcpserver.ListOutput
	if msg := call(t, cs, "nas_list", map[string]any{"path": "/"}, &root); msg != "" {
		t.Fatal(msg)
	}
	if len(root.Entries) != 0 || !slices.Equal(root.Dirs, []string{"docs/", "ref/"}) {
		t.Fatalf("root lists %+v", root)
	}
	var all mcpserver.ListOutput
	if msg := call(t, cs, "nas_list", map[string]any{"path": "", "recursive": true}, &all); msg != "" {
		t.Fatal(msg)
	}
	var keys []string
	for _, e := range all.Entries {
		keys = append(keys, e.Key)
		if e.ETag == "" || e.LastModified.IsZero() || e.Labels == nil || e.Labels.Origin == "" || e.Labels.Sensitivity == "" {
			t.Errorf("entry %+v lacks an etag, a time or labels", e)
		}
	}
	if want := []string{"docs/big.md", "docs/guide.md", "ref/readme.txt"}; !slices.Equal(keys, want) {
		t.Fatalf("recursive listing %v, want %v", keys, want)
	}
}

func testWriteRead(t *testing.T, cs *mcp.ClientSession) {
	var wr mcpserver.WriteOutput
	text := "# Notes\n\nwritten over MCP\n"
	if msg := call(t, cs, "nas_write", map[string]any{"path": "docs/notes.md", "content": text, "intent": "keep notes"}, &wr); msg != "" {
		t.Fatal(msg)
	}
	if wr.Size != int64(len(text)) || wr.ETag == "" || wr.VersionID == "" || wr.Commit == "" {
		t.Fatalf("write answered %+v", wr)
	}
	var rd apiv1.FileReadResponse
	if msg := call(t, cs, "nas_read", map[string]any{"path": "docs/notes.md"}, &rd); msg != "" {
		t.Fatal(msg)
	}
	if rd.Content != text || rd.View != apiv1.ViewFull || rd.Commit != wr.Commit || len(rd.Evidence) == 0 {
		t.Fatalf("read back %+v", rd)
	}
}

func testOutline(t *testing.T, cs *mcp.ClientSession) {
	var rd apiv1.FileReadResponse
	if msg := call(t, cs, "nas_read", map[string]any{"path": "docs/big.md", "budget_tokens": 400}, &rd); msg != "" {
		t.Fatal(msg)
	}
	if rd.View != apiv1.ViewOutline || rd.Tokens > 400 || len(rd.Content) > 1600 || !strings.Contains(rd.Content, "# Big") {
		t.Fatalf("1 MiB in 400 tokens: view %s, %d tokens, %d bytes: %q", rd.View, rd.Tokens, len(rd.Content), rd.Content)
	}
}

func testLeaseBudgets(t *testing.T, cs *mcp.ClientSession) {
	var before, after apiv1.LeaseGetResponse
	if msg := call(t, cs, "nas_lease", map[string]any{}, &before); msg != "" {
		t.Fatal(msg)
	}
	if before.Lease.Repo != repo || before.Lease.SessionToken != "" || before.Remaining.BytesRead <= 0 {
		t.Fatalf("lease %+v", before)
	}
	if msg := call(t, cs, "nas_read", map[string]any{"path": "docs/guide.md"}, nil); msg != "" {
		t.Fatal(msg)
	}
	call(t, cs, "nas_lease", map[string]any{}, &after)
	if after.Remaining.BytesRead >= before.Remaining.BytesRead {
		t.Fatalf("bytes left to read: %d before a read, %d after", before.Remaining.BytesRead, after.Remaining.BytesRead)
	}
}

// TestBudgetAndRevocation: a spent budget answers QuotaExceeded, a
// revoked lease ExpiredToken.
func TestBudgetAndRevocation(t *testing.T) {
	w := newWorld(t)
	tiny := w.session(t, w.lease(t, "tiny", lease.Budgets{BytesRead: 16}))
	wantRefused(t, tiny, "QuotaExceeded", "nas_read", map[string]any{"path": "docs/guide.md"})

	l := w.lease(t, "revoked", lease.Budgets{})
	cs := w.session(t, l)
	if msg := call(t, cs, "nas_lease", map[string]any{}, nil); msg != "" {
		t.Fatal(msg)
	}
	w.do(t, apiv1.LeaseRevokeRequest{LeaseID: l.ID}, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		msg := call(t, cs, "nas_read", map[string]any{"path": "docs/guide.md"}, nil)
		if strings.HasPrefix(msg, "ExpiredToken: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a revoked lease reads: %q", msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantRefused(t, cs, "ExpiredToken", "nas_write", map[string]any{"path": "docs/x.md", "content": "x"})
}

// TestChildLease: nas_lease with child issues a narrower lease a
// sub-agent can use on its own; one wider than the caller's is refused.
func TestChildLease(t *testing.T) {
	w := newWorld(t)
	cs := w.session(t, w.lease(t, "parent", lease.Budgets{}))
	var out mcpserver.LeaseOutput
	if msg := call(t, cs, "nas_lease", map[string]any{"child": map[string]any{
		"paths": []string{"docs/**"}, "actions": []string{"list", "read"}, "ttl": "10m", "purpose": "summarise the docs"}}, &out); msg != "" {
		t.Fatal(msg)
	}
	ch := out.Child
	if ch == nil || ch.SecretAccessKey == "" || ch.Endpoint != w.srv.Endpoint || ch.Parent == nil || *ch.Parent != out.Lease.ID ||
		out.Lease.SessionToken != "" {
		t.Fatalf("child %+v of %+v", ch, out.Lease)
	}
	sub := w.session(t, ch.Lease)
	if msg := call(t, sub, "nas_read", map[string]any{"path": "docs/guide.md"}, nil); msg != "" {
		t.Fatalf("the child reads docs: %s", msg)
	}
	wantRefused(t, sub, "NotFound", "nas_read", map[string]any{"path": "ref/readme.txt"})
	wantRefused(t, sub, "AccessDenied", "nas_write", map[string]any{"path": "docs/x.md", "content": "x"})
	msg := call(t, cs, "nas_lease", map[string]any{"child": map[string]any{"paths": []string{"secret/**"}, "actions": []string{"read"}}}, nil)
	if msg == "" {
		t.Fatal("a child wider than its parent was issued")
	}
}
