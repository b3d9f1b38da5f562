package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/internal/pgtest"
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

// TestClusterSurvivesPostgresRestart stops the database under a PUT
// load on three gateways: while it is down requests fail with 503, and
// once it is back the gateways serve again on their own; every PUT that
// was acknowledged reads back.
func TestClusterSurvivesPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.StartCluster(t)
	srv := nastest.StartCluster(t, 3, nastest.Options{Postgres: pg})
	own := client(t, srv)
	const repo = "cpg"
	createBucket(t, own, repo)
	var mu sync.Mutex
	acked := map[string][]byte{}
	var unavailable atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key, body := fmt.Sprintf("w%d/k%d", w, i), randBytes(fmt.Sprint("pg", w, i), 2000)
				_, err := tryPut(own, repo, key, body)
				switch code := errCode(err); {
				case err == nil:
					mu.Lock()
					acked[key] = body
					mu.Unlock()
				case code == "ServiceUnavailable" || code == "SlowDown":
					unavailable.Add(1)
					time.Sleep(20 * time.Millisecond)
				default:
					t.Errorf("PUT %s while the database restarts: %v", key, err)
					return
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	pg.Stop()
	time.Sleep(time.Second)
	if err := pg.Restart(); err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := tryPut(own, repo, "after", []byte("back"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("the gateways did not recover after the database came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if unavailable.Load() == 0 {
		t.Error("no request saw the database down")
	}
	for key, body := range acked {
		got, _ := get(t, own, repo, key)
		wantBytes(t, got, body)
	}
	t.Logf("%d PUTs acknowledged, %d answered 503 while the database was down", len(acked), unavailable.Load())
}

// tryPut stores body under key and returns the error, if any.
func tryPut(c *s3.Client, bucket, key string, body []byte) (*s3.PutObjectOutput, error) {
	return c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
}
