package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
)

// hiddenKeys are the keys of TestProposalLinesCeiling a lease with a
// private ceiling must never see named.
var hiddenKeys = []string{"secret/k.txt", "secret/m.txt", "secret/d.txt", "notes/was.txt", "secret/c.txt"}

// mentionsHidden returns the first hidden key v names, or "".
func mentionsHidden(v any) string {
	s := fmt.Sprint(v)
	for _, k := range hiddenKeys {
		if strings.Contains(s, k) {
			return k
		}
	}
	return ""
}

// TestProposalLinesCeiling: the owner's changes on a run's branch to
// entries above the lease's ceiling (a label rule's, a stored label's, on
// the new side or only on the old) are not lines of the lease's proposal
// nor of its gate card, and the counts count only what it sees; the
// owner's gate still shows them. A conflict on such a key is not named
// to the lease either.
func TestProposalLinesCeiling(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "lin", "protected": false})
	secret := &label.Label{Sensitivity: label.Secret}
	seed := map[string]*manifest.Entry{"secret/m.txt": {ETag: "m1"}, "secret/d.txt": {ETag: "d1"}, "secret/c.txt": {ETag: "c1"},
		"notes/was.txt": {ETag: "w1", Label: secret}, "docs/a.md": {ETag: "a1"}}
	for k, e := range seed {
		if _, err := svc.Put(ctx, "lin", "main", k, e, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("commit/create", map[string]any{"repo": "lin", "branch": "main", "message": "seed"})
	c.ok("branch/protect", map[string]any{"repo": "lin", "name": "main"})
	c.ok("label/set", map[string]any{"repo": "lin", "glob": "secret/**", "sensitivity": "secret"})

	lc, l := leaseClient(t, c, map[string]any{"repo": "lin", "role": "ceil", "fork_from": "main", "paths": []string{"**"},
		"actions": []string{"list", "read", "write", "propose"}})
	br := l["branch"].(string)
	// The owner adds, modifies and deletes secrets on the run's branch,
	// and overwrites a secret-labelled note with a plain one.
	for k, e := range map[string]*manifest.Entry{"secret/k.txt": {ETag: "k1"}, "secret/m.txt": {ETag: "m2"}, "notes/was.txt": {ETag: "w2"}} {
		if _, err := svc.Put(ctx, "lin", br, k, e, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Delete(ctx, "lin", br, "secret/d.txt", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	onBranch := s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", br))
	if _, err := s3Of(c, lc.creds).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("lin"), Key: aws.String("docs/mine.md"),
		Body: strings.NewReader("the run's own")}, onBranch); err != nil {
		t.Fatal(err)
	}

	p := lc.ok("propose/create", map[string]any{"repo": "lin", "into": "main", "intent": "my doc"})["proposal"].(map[string]any)
	if k := mentionsHidden(p); k != "" {
		t.Fatalf("the lease's proposal names %s: %v", k, p)
	}
	ch, counts := p["changes"].([]any), p["counts"].(map[string]any)
	if p["status"] != "pending" || len(ch) != 1 || ch[0].(map[string]any)["key"] != "docs/mine.md" ||
		counts["added"].(float64) != 1 || counts["modified"].(float64) != 0 || counts["deleted"].(float64) != 0 {
		t.Fatalf("the lease's proposal: %v", p)
	}
	gs := lc.ok("gate/list", map[string]any{"status": "pending"})["gates"].([]any)
	if len(gs) != 1 {
		t.Fatalf("the run's gates: %v", gs)
	}
	action := gs[0].(map[string]any)["card"].(map[string]any)["action"].(map[string]any)
	if k := mentionsHidden(gs); k != "" || action["files_changed"].(float64) != 1 || len(action["changes"].([]any)) != 1 {
		t.Fatalf("the run's gate card names %q: %v", k, action)
	}
	card := c.ok("gate/get", map[string]any{"gate_id": p["gate_id"]})["gate"].(map[string]any)["card"].(map[string]any)
	if a := card["action"].(map[string]any); a["files_changed"].(float64) != 5 || len(a["changes"].([]any)) != 5 {
		t.Fatalf("the owner's card: %v", a)
	}
	owners := c.ok("gate/list", map[string]any{"status": "pending"})["gates"].([]any)
	if !strings.Contains(fmt.Sprint(owners), "secret/k.txt") {
		t.Fatalf("the owner's gate list hides the secret: %v", owners)
	}

	// A conflict on a secret is not named to the lease.
	c.ok("gate/deny", map[string]any{"gate_id": p["gate_id"]})
	c.ok("branch/unprotect", map[string]any{"repo": "lin", "name": "main"})
	for _, b := range []string{"main", br} {
		if _, err := svc.Put(ctx, "lin", b, "secret/c.txt", &manifest.Entry{ETag: "c-" + b}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("commit/create", map[string]any{"repo": "lin", "branch": "main", "message": "the owner's c"})
	p2 := lc.ok("propose/create", map[string]any{"repo": "lin", "into": "main"})["proposal"].(map[string]any)
	if k := mentionsHidden(p2); p2["status"] != "conflict" || k != "" {
		t.Fatalf("the lease's conflicting proposal names %q: %v", k, p2)
	}
}

// TestGateCardDestructiveCeiling: the owner's delete of a secret on a
// run's branch makes the owner's card destructive, not the lease's (it
// would learn that a key it may not know of is deleted); the lease's own
// delete makes its card destructive too.
func TestGateCardDestructiveCeiling(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "dst", "protected": false})
	for _, k := range []string{"secret/d.txt", "docs/old.md"} {
		if _, err := svc.Put(ctx, "dst", "main", k, &manifest.Entry{ETag: "v1"}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("commit/create", map[string]any{"repo": "dst", "branch": "main", "message": "seed"})
	c.ok("branch/protect", map[string]any{"repo": "dst", "name": "main"})
	c.ok("label/set", map[string]any{"repo": "dst", "glob": "secret/**", "sensitivity": "secret"})
	lc, l := leaseClient(t, c, map[string]any{"repo": "dst", "role": "ceil", "fork_from": "main", "paths": []string{"**"},
		"actions": []string{"list", "read", "write", "delete", "propose"}})
	br := l["branch"].(string)
	if _, err := svc.Delete(ctx, "dst", br, "secret/d.txt", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Put(ctx, "dst", br, "docs/mine.md", &manifest.Entry{ETag: "m1"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	risk := func(cl *client) map[string]any {
		t.Helper()
		gs := cl.ok("gate/list", map[string]any{"status": "pending"})["gates"].([]any)
		if len(gs) != 1 {
			t.Fatalf("pending gates: %v", gs)
		}
		return gs[0].(map[string]any)["card"].(map[string]any)["risk"].(map[string]any)
	}
	p := lc.ok("propose/create", map[string]any{"repo": "dst", "into": "main"})["proposal"].(map[string]any)
	if p["status"] != "pending" {
		t.Fatalf("the proposal: %v", p)
	}
	if r := risk(lc); r["destructive"] != false {
		t.Fatalf("the lease's card tells of a hidden delete: %v", r)
	}
	if r := risk(c); r["destructive"] != true {
		t.Fatalf("the owner's card: %v", r)
	}
	if _, err := svc.Delete(ctx, "dst", br, "docs/old.md", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	lc.ok("propose/create", map[string]any{"repo": "dst", "into": "main"})
	if r := risk(lc); r["destructive"] != true {
		t.Fatalf("the lease's card with its own delete: %v", r)
	}
}
