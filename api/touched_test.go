package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// touchedKeys follows object/touched from cur as c: the keys named, All,
// and the next cursor.
func touchedKeys(c *client, repo, cur string) ([]string, bool, string) {
	c.t.Helper()
	out := c.ok("object/touched", map[string]any{"repo": repo, "cursor": cur})
	var keys []string
	for _, k := range out["keys"].([]any) {
		keys = append(keys, k.(map[string]any)["key"].(string))
	}
	return keys, out["all"].(bool), out["cursor"].(string)
}

// TestTouchedHidesWhatALeaseCannotSee: object/touched names to a lease
// only keys its paths show and its sensitivity ceiling admits; a key
// written above the ceiling is never named (the answer is All instead),
// nor is a key the lease never saw deleted; another branch's journal is
// another lease's business.
func TestTouchedHidesWhatALeaseCannotSee(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	svc := c.srv.Gateway.Branches
	c.ok("repo/create", map[string]any{"repo": "tch", "protected": false})
	c.ok("label/set", map[string]any{"repo": "tch", "glob": "pub/vault/**", "sensitivity": "secret"})
	put := func(k string) {
		if _, err := svc.Put(ctx, "tch", "main", k, &manifest.Entry{ETag: "e-" + k}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	del := func(k string) {
		if _, err := svc.Delete(ctx, "tch", "main", k, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"pub/a.txt", "pub/b.txt", "priv/x.txt", "pub/vault/s.txt"} {
		put(k)
	}
	lc, _ := leaseClient(t, c, map[string]any{"repo": "tch", "role": "watcher", "branch": "main",
		"paths": []string{"pub/**"}, "actions": []string{"list", "read"}})
	_, all, cur := touchedKeys(lc, "tch", "")
	if !all {
		t.Fatal("a first call must answer All")
	}

	put("pub/a.txt")
	put("priv/x.txt")
	del("pub/b.txt")
	del("pub/vault/s.txt") // hidden by its label: deleted unseen
	keys, all, cur := touchedKeys(lc, "tch", cur)
	if all || fmt.Sprint(keys) != "[pub/a.txt pub/b.txt]" {
		t.Fatalf("the lease heard %v (all %v); want the two keys it can see", keys, all)
	}
	if owner, _, _ := touchedKeys(c, "tch", ""); owner != nil {
		t.Fatalf("a first call names keys: %v", owner)
	}

	put("pub/vault/new.txt") // labelled secret: above the lease's ceiling
	keys, all, _ = touchedKeys(lc, "tch", cur)
	if !all || len(keys) != 0 {
		t.Fatalf("a key above the ceiling: heard %v (all %v); want All and no name", keys, all)
	}
	// A lease without list cannot follow.
	rc, _ := leaseClient(t, c, map[string]any{"repo": "tch", "role": "reader", "branch": "main",
		"paths": []string{"pub/**"}, "actions": []string{"read"}})
	rc.fails("object/touched", map[string]any{"repo": "tch"}, 403, "AccessDenied")
	lc.fails("object/touched", map[string]any{"repo": "tch", "branch": "dev"}, 404, "NotFound")
}
