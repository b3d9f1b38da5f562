package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// leaseClient issues a lease through the control API and returns a client
// using its credentials.
func leaseClient(t *testing.T, c *client, args map[string]any) (*client, map[string]any) {
	t.Helper()
	putRole(c, args)
	l := c.ok("lease/create", args)["lease"].(map[string]any)
	return &client{t: t, srv: c.srv, creds: aws.Credentials{AccessKeyID: l["access_key_id"].(string),
		SecretAccessKey: l["secret_access_key"].(string), SessionToken: l["session_token"].(string)}}, l
}

// putRole defines the role of an owner's lease request, as wide as a role
// can be: the owner's leases are held to their role's envelope.
func putRole(c *client, args map[string]any) {
	c.t.Helper()
	c.ok("role/put", map[string]any{"name": args["role"], "repo": args["repo"],
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write", "delete", "propose"}}}})
}

func TestProposeGateMerge(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "rev", "protected": false})
	for _, k := range []string{"docs/a.md", "docs/old.md", "src/main.go"} {
		if _, err := svc.Put(ctx, "rev", "main", k, &manifest.Entry{ETag: "v1-" + k}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("commit/create", map[string]any{"repo": "rev", "branch": "main", "message": "seed"})
	c.ok("branch/protect", map[string]any{"repo": "rev", "name": "main"})
	c.ok("checkpoint/create", map[string]any{"repo": "rev", "branch": "main", "name": "before-run"})

	lc, l := leaseClient(t, c, map[string]any{"repo": "rev", "role": "cleo", "fork_from": "main", "paths": []string{"docs/**"},
		"actions": []string{"list", "read", "write", "delete", "propose"}})
	br := l["branch"].(string)
	if _, err := svc.Put(ctx, "rev", br, "docs/a.md", &manifest.Entry{ETag: "v2"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Delete(ctx, "rev", br, "docs/old.md", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	p := lc.ok("propose/create", map[string]any{"repo": "rev", "into": "main", "intent": "update the docs"})["proposal"].(map[string]any)
	if p["status"] != "pending" || p["decision"] != "gate" || p["diff_sha256"] == "" {
		t.Fatalf("proposal: %v", p)
	}
	gid := p["gate_id"].(string)
	card := c.ok("gate/get", map[string]any{"gate_id": gid})["gate"].(map[string]any)["card"].(map[string]any)
	action := card["action"].(map[string]any)
	if action["files_changed"].(float64) != 2 || action["diff_sha256"] != p["diff_sha256"] || card["default"] != "deny" {
		t.Fatalf("card: %v", card)
	}
	// The run cannot decide its own gate.
	lc.fails("gate/approve", map[string]any{"gate_id": gid}, 403, "AccessDenied")
	// It can see that it waits: its own branch's gates, and no others.
	if gs := lc.ok("gate/list", map[string]any{"status": "pending"})["gates"].([]any); len(gs) != 1 || gs[0].(map[string]any)["gate_id"] != gid {
		t.Fatalf("the run's gate/list: %v", gs)
	}
	g := c.ok("gate/approve", map[string]any{"gate_id": gid, "reason": "looks right"})["gate"].(map[string]any)
	if g["status"] != "approved" || g["merge_commit"] == "" {
		t.Fatalf("approve: %v", g)
	}
	if e, err := svc.Get(ctx, "rev", "main", "docs/a.md"); err != nil || e.ETag != "v2" {
		t.Fatalf("main after the approved merge: %v %v", e, err)
	}
	// The merge deleted docs/old.md from protected main: it is in the trash.
	trash := c.ok("trash/list", map[string]any{"repo": "rev"})["trash"].([]any)
	if len(trash) != 1 || trash[0].(map[string]any)["key"] != "docs/old.md" {
		t.Fatalf("trash: %v", trash)
	}
	c.ok("trash/restore", map[string]any{"repo": "rev", "path": "docs/old.md"})
	if _, err := svc.Get(ctx, "rev", "main", "docs/old.md"); err != nil {
		t.Fatalf("restored from the trash: %v", err)
	}
	lc.fails("trash/restore", map[string]any{"repo": "rev", "path": "docs/old.md"}, 403, "AccessDenied")
	lc.fails("checkpoint/list", map[string]any{"repo": "rev", "branch": "main"}, 404, "NotFound")
	lc.fails("checkpoint/restore", map[string]any{"repo": "rev", "branch": "main", "name": "before-run"}, 404, "NotFound")

	// An approval after the diff changed is void: nothing merges.
	if _, err := svc.Put(ctx, "rev", br, "docs/b.md", &manifest.Entry{ETag: "b1"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	p2 := lc.ok("propose/create", map[string]any{"repo": "rev", "into": "main", "intent": "more"})["proposal"].(map[string]any)
	if _, err := svc.Put(ctx, "rev", br, "docs/c.md", &manifest.Entry{ETag: "sneaky"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	lc.ok("commit/create", map[string]any{"repo": "rev", "branch": br, "message": "after the card"})
	c.fails("gate/approve", map[string]any{"gate_id": p2["gate_id"]}, 409, "ApprovalVoid")
	if _, err := svc.Get(ctx, "rev", "main", "docs/c.md"); err == nil {
		t.Fatal("a void approval merged")
	}

	// Policy: small doc changes merge at once, anything touching src/ is refused.
	c.ok("policy/set", map[string]any{"repo": "rev", "policy": map[string]any{"rules": []map[string]any{
		{"name": "no-src", "touches": []string{"src/**"}, "then": "refuse"},
		{"name": "small-docs", "within": []string{"docs/**"}, "max_changes": 5, "then": "merge"},
	}}})
	p3 := lc.ok("propose/create", map[string]any{"repo": "rev", "into": "main"})["proposal"].(map[string]any)
	if p3["status"] != "merged" || p3["rule"] != "small-docs" {
		t.Fatalf("policy merge: %v", p3)
	}
	st := c.ok("gate/stats", map[string]any{})["stats"].(map[string]any)
	if st["approved"].(float64) != 1 || st["void"].(float64) != 1 {
		t.Fatalf("stats: %v", st)
	}
	// Checkpoint restore brings back the tree of before the run.
	c.ok("checkpoint/restore", map[string]any{"repo": "rev", "branch": "main", "name": "before-run"})
	if e, _ := svc.Get(ctx, "rev", "main", "docs/a.md"); e.ETag != "v1-docs/a.md" {
		t.Fatalf("after checkpoint restore: %v", e.ETag)
	}
	// Record: gate requests, decisions and merges are in the flight recorder.
	recs := c.ok("record/list", map[string]any{"kinds": []string{"gate.requested", "gate.decided", "merge"}})["records"].([]any)
	if len(recs) < 5 {
		t.Fatalf("%d gate/merge records", len(recs))
	}
}

func TestGateTimeout(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.srv.Gateway.Gates.Timeout = time.Millisecond
	c.ok("repo/create", map[string]any{"repo": "slow", "protected": true})
	c.ok("branch/create", map[string]any{"repo": "slow", "name": "work", "from": "main"})
	if _, err := svc.Put(ctx, "slow", "work", "x", &manifest.Entry{ETag: "1"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	p := c.ok("propose/create", map[string]any{"repo": "slow", "branch": "work", "into": "main"})["proposal"].(map[string]any)
	time.Sleep(5 * time.Millisecond)
	g := c.ok("gate/get", map[string]any{"gate_id": p["gate_id"]})["gate"].(map[string]any)
	if g["status"] != "expired" {
		t.Fatalf("a gate past its deadline: %v", g["status"])
	}
	c.fails("gate/approve", map[string]any{"gate_id": p["gate_id"]}, 409, "AlreadyDecided")
}

// TestProposeAgainWaits: proposing again what already waits at a gate
// returns that gate (an agent retrying learns it waits); proposing after the
// branch changed supersedes the old gate, whose approval could not merge.
func TestProposeAgainWaits(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "again"})
	lc, l := leaseClient(t, c, map[string]any{"repo": "again", "role": "cleo", "fork_from": "main", "paths": []string{"**"},
		"actions": []string{"list", "read", "write", "propose"}})
	br := l["branch"].(string)
	if _, err := svc.Put(ctx, "again", br, "a", &manifest.Entry{ETag: "1"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	p1 := lc.ok("propose/create", map[string]any{"repo": "again", "into": "main"})["proposal"].(map[string]any)
	p2 := lc.ok("propose/create", map[string]any{"repo": "again", "into": "main"})["proposal"].(map[string]any)
	if p1["status"] != "pending" || p2["gate_id"] != p1["gate_id"] || p2["proposal_id"] != p1["proposal_id"] {
		t.Fatalf("proposing again: %v then %v", p1, p2)
	}
	if n := len(c.ok("gate/list", map[string]any{"status": "pending"})["gates"].([]any)); n != 1 {
		t.Fatalf("%d pending gates after proposing twice", n)
	}
	if _, err := svc.Put(ctx, "again", br, "b", &manifest.Entry{ETag: "2"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	p3 := lc.ok("propose/create", map[string]any{"repo": "again", "into": "main"})["proposal"].(map[string]any)
	if p3["gate_id"] == p1["gate_id"] || p3["status"] != "pending" {
		t.Fatalf("proposal after a change: %v", p3)
	}
	old := c.ok("gate/get", map[string]any{"gate_id": p1["gate_id"]})["gate"].(map[string]any)
	if old["status"] != "void" {
		t.Fatalf("the superseded gate is %v", old["status"])
	}
	c.fails("gate/approve", map[string]any{"gate_id": p1["gate_id"]}, 409, "AlreadyDecided")
	g := c.ok("gate/approve", map[string]any{"gate_id": p3["gate_id"]})["gate"].(map[string]any)
	if g["status"] != "approved" {
		t.Fatalf("approving the new gate: %v", g)
	}
}

// TestRunCheckpoints: a lease names checkpoints of its own branch and goes
// back to them; it cannot reach another branch's, cannot restore over keys
// it cannot see, and names at most branch.MaxRunCheckpoints.
func TestRunCheckpoints(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "cps", "protected": false})
	for _, k := range []string{"docs/a.md", "secret/s.md"} {
		if _, err := svc.Put(ctx, "cps", "main", k, &manifest.Entry{ETag: "v1"}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("commit/create", map[string]any{"repo": "cps", "branch": "main", "message": "seed"})
	lc, l := leaseClient(t, c, map[string]any{"repo": "cps", "role": "cleo", "fork_from": "main", "paths": []string{"docs/**"},
		"actions": []string{"list", "read", "write", "delete"}})
	br := l["branch"].(string)
	cp := lc.ok("checkpoint/create", map[string]any{"repo": "cps", "name": "start"})["checkpoint"].(map[string]any)
	if cp["branch"] != br || cp["by"] != l["lease_id"] {
		t.Fatalf("checkpoint: %v", cp)
	}
	lc.fails("checkpoint/create", map[string]any{"repo": "cps", "name": "start"}, 409, "AlreadyExists")
	lc.fails("checkpoint/create", map[string]any{"repo": "cps", "branch": "main", "name": "x"}, 404, "NotFound")

	put := func(k, etag string) {
		t.Helper()
		if _, err := svc.Put(ctx, "cps", br, k, &manifest.Entry{ETag: etag}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	put("docs/a.md", "v2")
	put("docs/new.md", "n1")
	lc.fails("checkpoint/restore", map[string]any{"repo": "cps", "name": "start"}, 409, "Conflict") // staged changes
	lc.ok("commit/create", map[string]any{"repo": "cps", "branch": br, "message": "work"})
	lc.ok("checkpoint/restore", map[string]any{"repo": "cps", "name": "start"})
	if e, err := svc.Get(ctx, "cps", br, "docs/a.md"); err != nil || e.ETag != "v1" {
		t.Fatalf("docs/a.md after restore: %v %v", e, err)
	}
	if _, err := svc.Get(ctx, "cps", br, "docs/new.md"); err == nil {
		t.Fatal("docs/new.md survived the restore")
	}
	if cps := lc.ok("checkpoint/list", map[string]any{"repo": "cps"})["checkpoints"].([]any); len(cps) != 1 {
		t.Fatalf("the lease's checkpoints: %v", cps)
	}

	// The owner changes a key the lease cannot see: going back would undo
	// it, so the lease's restore is refused without naming the key.
	put("secret/s.md", "v2")
	c.ok("commit/create", map[string]any{"repo": "cps", "branch": br, "message": "owner's change"})
	st, out := lc.call("checkpoint/restore", map[string]any{"repo": "cps", "name": "start"})
	if e, _ := out["error"].(map[string]any); st != 403 || e["code"] != "AccessDenied" || strings.Contains(fmt.Sprint(out), "secret") {
		t.Fatalf("restore over a hidden change: %d %v", st, out)
	}

	for i := 1; i < branch.MaxRunCheckpoints; i++ {
		lc.ok("checkpoint/create", map[string]any{"repo": "cps", "name": fmt.Sprintf("cp-%d", i)})
	}
	lc.fails("checkpoint/create", map[string]any{"repo": "cps", "name": "one-too-many"}, 403, "QuotaExceeded")
	c.ok("checkpoint/create", map[string]any{"repo": "cps", "branch": br, "name": "owner-still-can"})
}

// TestLeaseWiden: a lease asks for wider authority and gets it only when
// a person approves; denial, revocation and its own approval get nothing.
func TestLeaseWiden(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "wide", "protected": false})
	if _, err := svc.Put(ctx, "wide", "main", "secret/s.md", &manifest.Entry{ETag: "s1"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	c.ok("commit/create", map[string]any{"repo": "wide", "branch": "main", "message": "seed"})
	lc, l := leaseClient(t, c, map[string]any{"repo": "wide", "role": "cleo", "fork_from": "main", "paths": []string{"docs/**"},
		"actions": []string{"list", "read", "write"}})
	read := map[string]any{"repo": "wide", "path": "secret/s.md", "view": "full"}
	lc.fails("files/read", read, 404, "NotFound")

	ask := map[string]any{"paths": []string{"secret/**"}, "actions": []string{"read"}, "ttl": "10m", "reason": "the report cites it"}
	g := lc.ok("lease/widen", ask)["gate"].(map[string]any)
	act := g["card"].(map[string]any)["action"].(map[string]any)
	if g["status"] != "pending" || act["op"] != "lease.widen" || act["from"] != l["branch"] || act["diff_sha256"] == "" {
		t.Fatalf("gate: %v", g)
	}
	if again := lc.ok("lease/widen", ask)["gate"].(map[string]any); again["gate_id"] != g["gate_id"] {
		t.Fatalf("asking twice made two gates: %v", again)
	}
	lc.fails("files/read", read, 404, "NotFound") // asking is not getting
	lc.fails("gate/approve", map[string]any{"gate_id": g["gate_id"]}, 403, "AccessDenied")
	lc.fails("lease/widen", map[string]any{"paths": []string{"x/**"}, "actions": []string{"read"}}, 400, "InvalidArgument") // no reason
	c.fails("lease/widen", ask, 400, "InvalidArgument")                                                                     // the owner

	d := c.ok("gate/approve", map[string]any{"gate_id": g["gate_id"], "reason": "fine"})["gate"].(map[string]any)
	if d["status"] != "approved" || len(d["grants"].([]any)) != 1 {
		t.Fatalf("approved: %v", d)
	}
	lc.ok("files/read", read)
	got := lc.ok("lease/get", map[string]any{})["lease"].(map[string]any)
	if gs, _ := got["grants"].([]any); len(gs) != 1 {
		t.Fatalf("the lease's grants: %v", got["grants"])
	}

	// Denied: nothing granted. Approved after revocation: void.
	g2 := lc.ok("lease/widen", map[string]any{"paths": []string{"other/**"}, "actions": []string{"read"}, "reason": "more"})["gate"].(map[string]any)
	c.ok("gate/deny", map[string]any{"gate_id": g2["gate_id"]})
	g3 := lc.ok("lease/widen", map[string]any{"paths": []string{"third/**"}, "actions": []string{"write"}, "reason": "more"})["gate"].(map[string]any)
	c.ok("lease/revoke", map[string]any{"lease_id": l["lease_id"]})
	c.fails("gate/approve", map[string]any{"gate_id": g3["gate_id"]}, 409, "ApprovalVoid")
	recs := c.ok("record/list", map[string]any{"kinds": []string{"gate.requested", "gate.decided", "share.granted"}})["records"].([]any)
	if len(recs) != 3+3+1 {
		t.Fatalf("%d widen records, want 7: %v", len(recs), recs)
	}
}
