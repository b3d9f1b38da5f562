package e2e_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentnas/nas/nastest"
)

// The tests of this file run three gateways on one PostgreSQL database
// and one chunk directory (nastest.StartCluster), requests spread over
// them in turn: what one gateway charged, locked or wrote, the others
// must see.

// TestClusterBudget spends a lease's read budget from three gateways at
// once: exactly the budget's worth of GETs is served, whichever gateway
// each lands on.
func TestClusterBudget(t *testing.T) {
	t.Parallel()
	srv := nastest.StartCluster(t, 3, nastest.Options{})
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "cbud"
	createBucket(t, own, repo)
	body := randBytes("cluster-budget", 1000)
	put(t, own, repo, "shared/obj", body)
	oc.commit(repo, "main", "seed")
	li := oc.newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h",
		"budgets": map[string]any{"bytes_read": 10 * len(body), "requests": 1000},
		"paths":   []string{"shared/**"},
		"actions": []string{"list", "read"},
		"purpose": "cluster budget"})
	c := leaseS3(t, srv, li, noChecksumValidation)
	var served, refused, other atomic.Int64
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			got, _, err := tryGet(c, repo, "shared/obj")
			switch {
			case err == nil && len(got) == len(body):
				served.Add(1)
			case errCode(err) == "QuotaExceeded":
				refused.Add(1)
			default:
				other.Add(1)
				t.Errorf("GET: %d bytes, %v", len(got), err)
			}
		})
	}
	wg.Wait()
	if served.Load() != 10 || refused.Load() != 20 {
		t.Fatalf("a budget of 10 reads spent from 3 gateways: %d served, %d refused, %d failed", served.Load(), refused.Load(), other.Load())
	}
}

// TestClusterCommits writes and commits one branch from three gateways
// at once: every acknowledged write is in the branch after a last
// commit, and the flight recorder's one chain verifies.
func TestClusterCommits(t *testing.T) {
	t.Parallel()
	srv := nastest.StartCluster(t, 3, nastest.Options{})
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "ccom"
	createBucket(t, own, repo)
	const writers, each = 6, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				put(t, own, repo, fmt.Sprintf("w%d/k%d", w, i), randBytes(fmt.Sprint(w, i), 100))
				if st, out := oc.call("commit/create", map[string]any{"repo": repo, "branch": "main", "message": "w"}); st != http.StatusOK && st != http.StatusConflict {
					t.Errorf("commit: %d %v", st, out)
				}
			}
		})
	}
	wg.Wait()
	if st, out := oc.call("commit/create", map[string]any{"repo": repo, "branch": "main", "message": "last"}); st != http.StatusOK && st != http.StatusConflict {
		t.Fatalf("last commit: %d %v", st, out)
	}
	for w := range writers {
		for i := range each {
			got, _ := get(t, own, repo, fmt.Sprintf("w%d/k%d", w, i))
			wantBytes(t, got, randBytes(fmt.Sprint(w, i), 100))
		}
	}
	for _, m := range srv.Members {
		st, _, b := rawDo(t, http.MethodPost, "http://"+m.Addr+"/_nas/v1/commit/create", []byte(`{"repo":"ccom","branch":"main","message":"x"}`), owner, nil)
		if st != http.StatusConflict {
			t.Errorf("nothing left to commit on %s: %d %s", m.Addr, st, b)
		}
	}
	if out := oc.ok("record/verify", map[string]any{}); out["ok"] != true {
		t.Fatalf("record/verify after appends from 3 gateways: %v", out)
	}
}

// TestClusterCollectsAlone: a collection is refused while other gateways
// are live, and runs once they have stopped.
func TestClusterCollectsAlone(t *testing.T) {
	t.Parallel()
	srv := nastest.StartCluster(t, 3, nastest.Options{})
	oc := ownerCtl(t, srv)
	oc.fails("admin/gc", map[string]any{}, http.StatusConflict, "Conflict")
	srv.Members[1].Stop()
	srv.Members[2].Stop()
	for range 3 { // the proxy still sends a turn to the stopped ones
		st, _, b := rawDo(t, http.MethodPost, "http://"+srv.Members[0].Addr+"/_nas/v1/admin/gc", []byte(`{}`), owner, nil)
		if st == http.StatusOK {
			return
		}
		t.Logf("admin/gc: %d %s", st, b)
	}
	t.Fatal("a collection with the other gateways stopped was refused")
}
