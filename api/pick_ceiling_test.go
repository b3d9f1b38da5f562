package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
)

// TestPickConflictsCeiling: a lease's revert that conflicts on keys
// above its ceiling (by a label rule, or by a label stored only in the
// reverted commit) names only the conflicts it may see; one whose every
// conflict is such a key is refused without naming any.
func TestPickConflictsCeiling(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "pck", "protected": false})
	c.ok("label/set", map[string]any{"repo": "pck", "glob": "secret/**", "sensitivity": "secret"})
	lc, l := leaseClient(t, c, map[string]any{"repo": "pck", "role": "picker", "fork_from": "main", "paths": []string{"**"},
		"actions": []string{"list", "read", "write"}})
	br := l["branch"].(string)
	secret := &label.Label{Sensitivity: label.Secret}
	// Three commits by the owner on the run's branch, each changing every
	// key: reverting the middle one conflicts on all of them.
	commit := func(keys []string, v string) string {
		for _, k := range keys {
			e := &manifest.Entry{ETag: v + "-" + k}
			if k == "notes/was.txt" && v == "2" {
				e.Label = secret
			}
			if _, err := svc.Put(ctx, "pck", br, k, e, branch.Condition{}); err != nil {
				t.Fatal(err)
			}
		}
		return c.ok("commit/create", map[string]any{"repo": "pck", "branch": br, "message": v})["commit"].(map[string]any)["id"].(string)
	}
	mixed := []string{"docs/a.md", "secret/c.txt", "notes/was.txt"}
	commit(mixed, "1")
	mid := commit(mixed, "2")
	commit(mixed, "3")
	st, out := lc.call("commit/revert", map[string]any{"repo": "pck", "branch": br, "commit": mid})
	res := fmt.Sprint(out)
	if st != 409 || !strings.Contains(res, "docs/a.md") || strings.Contains(res, "secret/c.txt") || strings.Contains(res, "notes/was.txt") ||
		!strings.Contains(res, "1 conflicting key") {
		t.Fatalf("the lease's conflicting revert: %d %v", st, out)
	}
	st, out = c.call("commit/revert", map[string]any{"repo": "pck", "branch": br, "commit": mid})
	if st != 409 || !strings.Contains(fmt.Sprint(out), "secret/c.txt") || !strings.Contains(fmt.Sprint(out), "notes/was.txt") {
		t.Fatalf("the owner's conflicting revert: %d %v", st, out)
	}

	hidden := []string{"secret/c.txt", "notes/was.txt"}
	commit(hidden, "4")
	mid = commit(hidden, "2")
	commit(hidden, "5")
	st, out = lc.call("commit/revert", map[string]any{"repo": "pck", "branch": br, "commit": mid})
	if e, _ := out["error"].(map[string]any); st != 403 || e["code"] != "AccessDenied" || mentionsHidden(out) != "" {
		t.Fatalf("the lease's revert conflicting only on hidden keys: %d %v", st, out)
	}
}

// TestPickChangesCeiling: a lease's revert or checkpoint restore that
// would write or remove an entry above its ceiling (by a label rule, or
// a label stored only on the side it would overwrite) is refused without
// naming the key, and changes nothing; the owner's revert goes through.
func TestPickChangesCeiling(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "pch", "protected": false})
	c.ok("label/set", map[string]any{"repo": "pch", "glob": "secret/**", "sensitivity": "secret"})
	lc, l := leaseClient(t, c, map[string]any{"repo": "pch", "role": "picker", "fork_from": "main", "paths": []string{"**"},
		"actions": []string{"list", "read", "write", "delete"}})
	br := l["branch"].(string)
	put := func(k string, e *manifest.Entry) string {
		if _, err := svc.Put(ctx, "pch", br, k, e, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
		return c.ok("commit/create", map[string]any{"repo": "pch", "branch": br, "message": k})["commit"].(map[string]any)["id"].(string)
	}
	put("docs/a.md", &manifest.Entry{ETag: "a1"})
	lc.ok("checkpoint/create", map[string]any{"repo": "pch", "branch": br, "name": "before"})
	added := put("secret/c.txt", &manifest.Entry{ETag: "c1"})
	labelled := put("notes/was.txt", &manifest.Entry{ETag: "w1", Label: &label.Label{Sensitivity: label.Secret}})
	for _, id := range []string{added, labelled} {
		st, out := lc.call("commit/revert", map[string]any{"repo": "pch", "branch": br, "commit": id})
		if e, _ := out["error"].(map[string]any); st != 403 || e["code"] != "AccessDenied" || mentionsHidden(out) != "" {
			t.Fatalf("the lease's revert of %s: %d %v", id, st, out)
		}
	}
	st, out := lc.call("checkpoint/restore", map[string]any{"repo": "pch", "branch": br, "name": "before"})
	if e, _ := out["error"].(map[string]any); st != 403 || e["code"] != "AccessDenied" || mentionsHidden(out) != "" {
		t.Fatalf("the lease's restore: %d %v", st, out)
	}
	for _, k := range []string{"secret/c.txt", "notes/was.txt"} {
		if _, err := svc.Get(ctx, "pch", br, k); err != nil {
			t.Fatalf("%s after the refused changes: %v", k, err)
		}
	}
	c.ok("commit/revert", map[string]any{"repo": "pch", "branch": br, "commit": labelled})
}
