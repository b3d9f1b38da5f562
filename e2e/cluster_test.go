package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/hook"
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

// TestClusterCollectsOnline collects garbage on one gateway while the
// other two take PUTs (new bytes, and bytes of deleted objects, which
// deduplicate against chunks the collection is about to delete) and
// commits: writes go on (a 503 is retried), every acknowledged object
// reads back from every gateway, the collections reclaim the garbage and
// fsck is clean.
func TestClusterCollectsOnline(t *testing.T) {
	// Not parallel: its segment files and connections, on top of the
	// parallel tests' in cluster mode, pass a 1,024-descriptor limit.
	srv := nastest.StartCluster(t, 3, nastest.Options{})
	own := client(t, srv)
	const repo = "cgc"
	createBucket(t, own, repo)
	oc := ownerCtl(t, srv)
	// Garbage: the writers upload most of it again, one body at a time
	// while the collections mark and sweep, so some of their PUTs reuse
	// chunks a sweep has chosen; the rest only the collections see.
	garbage := make([][]byte, 160)
	var keys []types.ObjectIdentifier
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < len(garbage); i += 8 {
				garbage[i] = randBytes(fmt.Sprint("garbage", i), 70<<10+i*17)
				put(t, own, repo, fmt.Sprintf("old/%d", i), garbage[i])
			}
		})
	}
	wg.Wait()
	for i := range garbage {
		keys = append(keys, types.ObjectIdentifier{Key: aws.String(fmt.Sprintf("old/%d", i))})
	}
	oc.commit(repo, "main", "garbage to be")
	_, err := own.DeleteObjects(context.Background(), &s3.DeleteObjectsInput{Bucket: aws.String(repo), Delete: &types.Delete{Objects: keys}})
	must(t, err)
	oc.commit(repo, "main", "garbage")
	time.Sleep(1100 * time.Millisecond) // past the retention the collections get

	acked, retried := writeDuringCollections(t, srv, repo, garbage[:130])
	var readers []*s3.Client // one a gateway: a client each read would open a connection each
	for _, m := range srv.Members {
		readers = append(readers, client(t, m))
	}
	for k, b := range acked {
		for _, c := range readers {
			got, _ := get(t, c, repo, k)
			wantBytes(t, got, b)
		}
	}
	rep := oc.ok("admin/fsck", map[string]any{})
	if rep["ok"] != true {
		t.Fatalf("fsck after collections beside writers: %v", rep)
	}
	t.Logf("%d PUTs acknowledged, %d answered 503 and retried", len(acked), retried)
}

// writeDuringCollections runs PUTs and commits on gateways 1 and 2 while
// gateway 0 collects three times, and returns the acknowledged objects
// and the number of 503 answers the writers retried.
func writeDuringCollections(t *testing.T, srv *nastest.Server, repo string, garbage [][]byte) (map[string][]byte, int64) {
	ps := newPutStreams()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		c := client(t, srv.Members[1+w%2])
		wg.Go(func() {
			ps.run(t, c, repo, "during a collection", 0, func(i int) (string, []byte) {
				key, body := fmt.Sprintf("w%d/%d", w, i), randBytes(fmt.Sprint("gcw", w, i), 4096+i%10/9*(1<<20))
				if g := int(next.Load()); i%2 == 1 && g < len(garbage) {
					body = garbage[g]
					next.Add(1)
				}
				return key, body
			})
		})
	}
	stop := ps.stop
	committer := ownerCtl(t, srv.Members[2])
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			committer.commit(repo, "main", "while collecting")
		}
	})
	collector := ownerCtl(t, srv.Members[0])
	var reclaimed float64
	for range 3 {
		time.Sleep(300 * time.Millisecond)
		out := collector.ok("admin/gc", map[string]any{"retention_seconds": 1})
		st, _ := out["stats"].(map[string]any)
		ch, _ := st["chunks"].(map[string]any)
		n, _ := ch["chunks"].(float64)
		reclaimed += n
	}
	close(stop)
	wg.Wait()
	if reclaimed == 0 {
		t.Error("the collections beside the writers reclaimed no chunk")
	}
	return ps.acked, ps.unavailable.Load()
}

// putStreams are PUT loops that keep what was acknowledged and count the
// 503 answers, until stop is closed.
type putStreams struct {
	mu          sync.Mutex
	acked       map[string][]byte
	unavailable atomic.Int64
	stop        chan struct{}
}

func newPutStreams() *putStreams {
	return &putStreams{acked: map[string][]byte{}, stop: make(chan struct{})}
}

// run PUTs next(0), next(1)... with c until stop; a 503 is counted (and
// followed by pause), anything else but success fails the test.
func (ps *putStreams) run(t *testing.T, c *s3.Client, repo, while string, pause time.Duration, next func(i int) (string, []byte)) {
	for i := 0; ; i++ {
		select {
		case <-ps.stop:
			return
		default:
		}
		key, body := next(i)
		_, err := tryPut(c, repo, key, body)
		switch code := errCode(err); {
		case err == nil:
			ps.mu.Lock()
			ps.acked[key] = body
			ps.mu.Unlock()
		case code == "ServiceUnavailable" || code == "SlowDown":
			ps.unavailable.Add(1)
			time.Sleep(pause)
		case errors.Is(err, net.ErrClosed):
			// net/http closed the client's own connection under the
			// answer (aws-sdk-go-v2 issues 1825 and 2737: its answer is
			// to retry, and this suite asks for one attempt). The
			// server answered and kept the connection; the outcome is
			// unknown, so the key is neither acknowledged nor failed.
			t.Logf("PUT %s %s: the client lost the answer: %v", key, while, err)
			time.Sleep(pause)
		default:
			t.Errorf("PUT %s %s: %v", key, while, err)
			return
		}
	}
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
	ps := newPutStreams()
	stop, acked, unavailable := ps.stop, ps.acked, &ps.unavailable
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			ps.run(t, own, repo, "while the database restarts", 20*time.Millisecond, func(i int) (string, []byte) {
				return fmt.Sprintf("w%d/k%d", w, i), randBytes(fmt.Sprint("pg", w, i), 2000)
			})
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

// TestClusterDeliversHooksOnce: three gateways deliver a repository's
// webhooks once, not once each, in the order of the one chain.
func TestClusterDeliversHooksOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string]int{}
	var seqs []uint64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p hook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("delivery: %v", err)
		}
		mu.Lock()
		got[p.ID]++
		seqs = append(seqs, p.Seq)
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	srv := nastest.StartCluster(t, 3, nastest.Options{Hooks: hook.Options{Poll: 20 * time.Millisecond, Backoff: 20 * time.Millisecond}})
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "chook"
	createBucket(t, own, repo)
	oc.ok("hook/add", map[string]any{"repo": repo, "url": rcv.URL, "events": []string{"commit"}})
	for i := range 6 {
		put(t, own, repo, fmt.Sprintf("k%d", i), []byte("x"))
		oc.commit(repo, "main", fmt.Sprint("c", i))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a duplicate to arrive
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 6 {
		t.Fatalf("%d distinct commit deliveries, want 6: %v", len(got), got)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("delivery %s arrived %d times", id, n)
		}
	}
	if !slices.IsSorted(seqs) {
		t.Errorf("deliveries out of the chain's order: %v", seqs)
	}
}

// TestClusterOnABucket keeps three gateways' segments in a bucket of a
// fourth (another gateway as the S3 store): objects written through one
// gateway read back through the others, large ones as segment objects in
// the bucket; while the bucket is down, a large PUT answers 503 and is
// not acknowledged, and once it is back everything acknowledged reads
// back.
func TestClusterOnABucket(t *testing.T) {
	t.Parallel()
	srv := nastest.StartCluster(t, 3, nastest.Options{ChunksBucket: true})
	own := client(t, srv)
	const repo = "cbkt"
	createBucket(t, own, repo)
	bodies := map[string][]byte{
		"small":   randBytes("bkt-small", 4<<10),
		"one-mib": randBytes("bkt-1m", 1<<20),
		"big":     randBytes("bkt-big", 9<<20+17),
	}
	for k, b := range bodies {
		put(t, own, repo, k, b)
	}
	for k, b := range bodies {
		for range 3 { // each read lands on the next gateway
			got, _ := get(t, own, repo, k)
			wantBytes(t, got, b)
		}
	}
	got, _ := get(t, own, repo, "big", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=5000000-5000099") })
	wantBytes(t, got, bodies["big"][5000000:5000100])
	bucket := client(t, srv.Bucket)
	out, err := bucket.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("chunks"), Prefix: aws.String("segments/")})
	must(t, err)
	if len(out.Contents) == 0 {
		t.Fatal("no segment in the chunk bucket")
	}
	for _, m := range srv.Members {
		if n := countFiles(t, m.DataDir, ".seg"); n != 0 {
			t.Errorf("gateway %s keeps %d segment files of its own", m.Addr, n)
		}
	}

	addr := srv.Bucket.Addr
	srv.Bucket.Stop()
	// New bytes: a body of chunks the store holds already needs no segment.
	if _, err := tryPut(own, repo, "while-down", randBytes("bkt-down", 3<<20)); errCode(err) != "ServiceUnavailable" {
		t.Fatalf("PUT while the chunk bucket is down: %v, want 503 ServiceUnavailable", err)
	}
	srv.Bucket = nastest.Start(t, nastest.Options{DataDir: srv.Bucket.DataDir, Addr: addr})
	put(t, own, repo, "after", bodies["one-mib"])
	for k, b := range bodies {
		got, _ := get(t, own, repo, k)
		wantBytes(t, got, b)
	}
	if _, _, err := tryGet(own, repo, "while-down"); errCode(err) != "NoSuchKey" {
		t.Fatalf("the PUT refused while the bucket was down: %v, want NoSuchKey", err)
	}

	// A collection beside the other gateways deletes the segment objects
	// nothing needs.
	bucket = client(t, srv.Bucket)
	segments := func() int {
		out, err := bucket.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("chunks"), Prefix: aws.String("segments/")})
		must(t, err)
		return len(out.Contents)
	}
	before := segments()
	_, err = own.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("big")})
	must(t, err)
	oc := ownerCtl(t, srv)
	oc.commit(repo, "main", "drop big")
	time.Sleep(1100 * time.Millisecond)
	st, _, b := rawDo(t, http.MethodPost, "http://"+srv.Members[0].Addr+"/_nas/v1/admin/gc", []byte(`{"retention_seconds":1}`), owner, nil)
	if st != http.StatusOK {
		t.Fatalf("admin/gc: %d %s", st, b)
	}
	if after := segments(); after >= before {
		t.Fatalf("segments in the bucket: %d before the collection, %d after (%s)", before, after, b)
	}
	for _, m := range srv.Members {
		got, _ = get(t, client(t, m), repo, "one-mib")
		wantBytes(t, got, bodies["one-mib"])
	}
}

// countFiles counts the files under dir whose names end in ext.
func countFiles(t testing.TB, dir, ext string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ext) {
			n++
		}
		return err
	})
	must(t, err)
	return n
}

// TestClusterQuota writes to a branch with a quota from three gateways
// at once: the quota is counted once, in the store, so exactly what fits
// is written.
func TestClusterQuota(t *testing.T) {
	t.Parallel()
	srv := nastest.StartCluster(t, 3, nastest.Options{})
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "cquota"
	createBucket(t, own, repo)
	put(t, own, repo, "seed", []byte("s"))
	oc.commit(repo, "main", "seed")
	oc.ok("branch/create", map[string]any{"repo": repo, "name": "small", "from": "main", "quota_bytes": 10*1024 + 1})
	c := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("small")}})
	var ok, over atomic.Int64
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			_, err := tryPut(c, repo, fmt.Sprintf("k%02d", i), randBytes(fmt.Sprint("q", i), 1024))
			switch {
			case err == nil:
				ok.Add(1)
			case errCode(err) == "QuotaExceeded":
				over.Add(1)
			default:
				t.Errorf("PUT: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 10 || over.Load() != 20 {
		t.Fatalf("a quota of 10 objects' bytes written from 3 gateways: %d written, %d refused", ok.Load(), over.Load())
	}
	u := oc.ok("branch/get", map[string]any{"repo": repo, "name": "small"})["branch"].(map[string]any)["usage"].(map[string]any)
	if u["bytes"] != float64(10*1024+1) || u["objects"] != float64(11) {
		t.Fatalf("usage %v", u)
	}
}
