package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/source"
)

// decodeInto re-decodes a control-API answer into its apiv1 type, unknown
// fields refused.
func decodeInto(t testing.TB, m map[string]any, out any) {
	t.Helper()
	b, err := json.Marshal(m)
	must(t, err)
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	must(t, d.Decode(out))
}

// prefetch starts (or with cancel stops) a prefetch of source id.
func (g *testGW) prefetch(t testing.TB, args map[string]any) apiv1.SourcePrefetch {
	t.Helper()
	var out apiv1.SourcePrefetchResponse
	decodeInto(t, g.owner(t, "source/prefetch", args), &out)
	return out.Prefetch
}

// status answers source/status for id.
func (g *testGW) status(t testing.TB, id string, scan bool) apiv1.SourceStatus {
	t.Helper()
	var out apiv1.SourceStatusResponse
	decodeInto(t, g.owner(t, "source/status", map[string]any{"id": id, "no_scan": !scan}), &out)
	return out.Status
}

// waitPrefetch polls until the prefetch of id is no longer running.
func (g *testGW) waitPrefetch(t testing.TB, id string) apiv1.SourcePrefetch {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := g.status(t, id, false)
		if st.Prefetch == nil {
			t.Fatal("no prefetch")
		}
		if st.Prefetch.State != source.PrefetchRunning {
			return *st.Prefetch
		}
		if time.Now().After(deadline) {
			t.Fatalf("prefetch still running: %+v", st.Prefetch)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// dataset puts objects of the sizes given under prefix p/ of bucket
// "remote" and returns them by repository key (under ds/).
func dataset(t testing.TB, rm *remote, sizes []int) map[string][]byte {
	t.Helper()
	rm.mkBucket(t, "remote")
	data := map[string][]byte{}
	for i, n := range sizes {
		key := fmt.Sprintf("k%02d", i)
		data["ds/"+key] = randomBytes(uint64(500+i), n)
		rm.put(t, "remote", "p/"+key, data["ds/"+key])
	}
	return data
}

func total(data map[string][]byte) (n int64) {
	for _, b := range data {
		n += int64(len(b))
	}
	return n
}

// wantAllLocal checks status counts every entry and byte as local.
func wantAllLocal(t testing.TB, g *testGW, id string, data map[string][]byte) {
	t.Helper()
	st := g.status(t, id, true)
	if !st.Scanned || st.Entries != int64(len(data)) || st.LocalEntries != st.Entries || st.Bytes != total(data) || st.LocalBytes != st.Bytes {
		t.Fatalf("status: %+v, want %d entries and %d bytes, all local", st, len(data), total(data))
	}
}

// mixedSizes are a few dozen objects, three of them over one block.
func mixedSizes() []int {
	sizes := []int{source.BlockSize + 123, 12<<20 + 5, 2*source.BlockSize + 1}
	for i := range 27 {
		sizes = append(sizes, (i+1)*20011)
	}
	return append(sizes, 0)
}

// TestPrefetchMakesEverythingLocal: after a prefetch every read is local
// (no request reaches the remote), and a second prefetch fetches nothing.
func TestPrefetchMakesEverythingLocal(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	data := dataset(t, rm, mixedSizes())
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	before := gw.status(t, id, true)
	if before.Prefetch != nil || before.LocalBytes != 0 || before.Entries != int64(len(data)) {
		t.Fatalf("status before: %+v", before)
	}
	m := gw.G.Sources.Materializer()
	f0 := m.Stats().FetchedBytes
	gw.prefetch(t, map[string]any{"id": id, "parallel": 4, "bytes_per_second": 1 << 40})
	p := gw.waitPrefetch(t, id)
	if p.State != source.PrefetchDone || p.FetchedBytes != total(data) || p.TotalBytes != total(data) ||
		p.TotalEntries != int64(len(data)) || p.Entries != p.TotalEntries || p.Drifted+p.Unavailable != 0 || p.Ended == nil {
		t.Fatalf("prefetch: %+v, want done with %d bytes fetched", p, total(data))
	}
	if d := m.Stats().FetchedBytes - f0; d != total(data) {
		t.Fatalf("%d bytes stored, want %d", d, total(data))
	}
	wantAllLocal(t, gw, id, data)

	r0 := rm.reqs.Load()
	for k, b := range data {
		mustGet(t, gw.S3, "data", k, b)
	}
	if d := rm.reqs.Load() - r0; d != 0 {
		t.Fatalf("reads after the prefetch sent %d requests to the remote", d)
	}
	again := gw.prefetch(t, map[string]any{"id": id})
	if again.State != source.PrefetchRunning || again.FetchedBytes != 0 {
		t.Fatalf("second prefetch started as %+v", again)
	}
	p = gw.waitPrefetch(t, id)
	if p.State != source.PrefetchDone || p.FetchedBytes != 0 || p.LocalEntries != int64(len(data)) || p.LocalBytes != total(data) {
		t.Fatalf("second prefetch: %+v", p)
	}
	if d := rm.gets.Load(); d != int64(len(data)-1) {
		t.Fatalf("%d object GETs in all, want one per object but the empty one (%d)", d, len(data)-1)
	}
}

// stallAfter lets n object GETs through the proxy, then stalls every
// later one after its first byte.
func stallAfter(fp *faultProxy, n int) {
	for range n {
		fp.inject(fault{})
	}
	fp.inject(fault{stallAt: 1, sticky: true})
}

// TestPrefetchCancelAndResume: a cancelled prefetch keeps what it
// fetched, and prefetching again fetches only the rest.
func TestPrefetchCancelAndResume(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	data := dataset(t, rm, []int{1 << 20, 3 << 20, 10, source.BlockSize + 7, 2 << 20, 5000, 1 << 20, 4 << 20})
	fp := startFaultProxy(t, rm.URL)
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", fp.URL, nil)["id"].(string)
	m := gw.G.Sources.Materializer()
	f0 := m.Stats().FetchedBytes

	stallAfter(fp, 4)
	first := gw.prefetch(t, map[string]any{"id": id, "parallel": 1})
	waitFor(t, "the fifth GET", func() bool { return fp.gets.Load() == 5 })
	if again := gw.prefetch(t, map[string]any{"id": id, "parallel": 8}); again.State != source.PrefetchRunning ||
		!again.Started.Equal(first.Started) || again.Parallel != 1 {
		t.Fatalf("a second prefetch while one runs: %+v, want the running one %+v", again, first)
	}
	c := gw.prefetch(t, map[string]any{"id": id, "cancel": true})
	if c.State != source.PrefetchCancelled || c.FetchedEntries != 4 || c.Entries != 4 {
		t.Fatalf("cancelled: %+v", c)
	}
	fp.clear()
	gw.prefetch(t, map[string]any{"id": id, "parallel": 3})
	p := gw.waitPrefetch(t, id)
	if p.State != source.PrefetchDone || p.LocalEntries != 4 || p.FetchedEntries != int64(len(data)-4) {
		t.Fatalf("resumed: %+v", p)
	}
	if c.FetchedBytes+p.FetchedBytes != total(data) || m.Stats().FetchedBytes-f0 != total(data) {
		t.Fatalf("fetched %d + %d bytes (stored %d), want %d in all: a block was fetched twice",
			c.FetchedBytes, p.FetchedBytes, m.Stats().FetchedBytes-f0, total(data))
	}
	wantAllLocal(t, gw, id, data)
	for k, b := range data {
		mustGet(t, gw.S3, "data", k, b)
	}
}

// TestPrefetchInterruptedByRestart: a gateway that stops mid-prefetch
// marks it interrupted, and prefetching again after the restart resumes.
func TestPrefetchInterruptedByRestart(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	data := dataset(t, rm, []int{2 << 20, 100, 3 << 20, 1 << 20, 7000})
	fp := startFaultProxy(t, rm.URL)
	dir := t.TempDir()
	gw := startGatewayAt(t, dir, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", fp.URL, nil)["id"].(string)
	stallAfter(fp, 2)
	gw.prefetch(t, map[string]any{"id": id, "parallel": 1})
	waitFor(t, "the third GET", func() bool { return fp.gets.Load() == 3 })
	gw.close()

	fp.clear()
	gw = startGatewayAt(t, dir, source.Options{})
	st := gw.status(t, id, true)
	if st.Prefetch == nil || st.Prefetch.State != source.PrefetchInterrupted || !strings.Contains(st.Prefetch.Error, "nas source prefetch") {
		t.Fatalf("after the restart: %+v", st.Prefetch)
	}
	if st.LocalEntries != 2 || st.Prefetch.FetchedEntries != 2 {
		t.Fatalf("after the restart %d entries local, the job says %d fetched; want 2", st.LocalEntries, st.Prefetch.FetchedEntries)
	}
	first := st.Prefetch.FetchedBytes
	gw.prefetch(t, map[string]any{"id": id})
	p := gw.waitPrefetch(t, id)
	if p.State != source.PrefetchDone || first+p.FetchedBytes != total(data) {
		t.Fatalf("resumed: %+v (first job fetched %d), want %d in all", p, first, total(data))
	}
	wantAllLocal(t, gw, id, data)
}

// TestPrefetchDrift: an object changed at the remote is counted and
// named; the others are fetched and the job is done.
func TestPrefetchDrift(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	data := dataset(t, rm, []int{1000, 2000, 3000, 4000, 5000})
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	rm.put(t, "remote", "p/k02", []byte("changed at the remote"))

	gw.prefetch(t, map[string]any{"id": id})
	p := gw.waitPrefetch(t, id)
	if p.State != source.PrefetchDone || p.Drifted != 1 || len(p.DriftedKeys) != 1 || p.DriftedKeys[0] != "ds/k02" ||
		p.FetchedEntries != 4 || p.Unavailable != 0 {
		t.Fatalf("prefetch with one drifted object: %+v", p)
	}
	st := gw.status(t, id, true)
	if st.LocalEntries != 4 || st.LocalBytes != total(data)-3000 {
		t.Fatalf("status: %+v", st)
	}
}

// TestPrefetchOutage: with the remote down the job fails with a clear
// error that status shows; nothing is recorded, and once the remote is
// back reads and a new prefetch work.
func TestPrefetchOutage(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	data := dataset(t, rm, []int{1000, 200000, 3 << 20, 40, 5000, 6000})
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	m := gw.G.Sources.Materializer()
	f0 := m.Stats().FetchedBytes

	rm.down.Store(true)
	gw.prefetch(t, map[string]any{"id": id, "parallel": 2})
	p := gw.waitPrefetch(t, id)
	if p.State != source.PrefetchFailed || !strings.Contains(p.Error, "remote source unavailable") ||
		!strings.Contains(p.Error, "in a row") || p.Unavailable < 3 || p.FetchedBytes != 0 {
		t.Fatalf("prefetch during an outage: %+v", p)
	}
	if st := gw.status(t, id, true); st.Prefetch.State != source.PrefetchFailed || st.LocalBytes != 0 {
		t.Fatalf("status after the outage: %+v", st)
	}
	if m.Stats().FetchedBytes != f0 {
		t.Fatal("a failed fetch recorded bytes")
	}
	rm.down.Store(false)
	for k, b := range data {
		mustGet(t, gw.S3, "data", k, b)
	}
	gw.prefetch(t, map[string]any{"id": id})
	if p := gw.waitPrefetch(t, id); p.State != source.PrefetchDone || p.LocalEntries != int64(len(data)) {
		t.Fatalf("prefetch after the outage: %+v", p)
	}
	rep, err := gw.G.Branches.Check(context.Background())
	must(t, err)
	if !rep.OK() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
}

// TestPrefetchArguments: what source/prefetch and source/status refuse.
func TestPrefetchArguments(t *testing.T) {
	t.Parallel()
	gw, id := twoObjectSource(t)
	for _, c := range []struct {
		op   string
		args map[string]any
		code int
	}{
		{"source/prefetch", map[string]any{"id": id, "parallel": 65}, http.StatusBadRequest},
		{"source/prefetch", map[string]any{"id": id, "parallel": -1}, http.StatusBadRequest},
		{"source/prefetch", map[string]any{"id": id, "bytes_per_second": -5}, http.StatusBadRequest},
		{"source/prefetch", map[string]any{"id": id, "prefix": "elsewhere/"}, http.StatusBadRequest},
		{"source/prefetch", map[string]any{"id": "src_nope"}, http.StatusNotFound},
		{"source/prefetch", map[string]any{"id": id, "cancel": true}, http.StatusNotFound}, // never prefetched
		{"source/prefetch", map[string]any{}, http.StatusBadRequest},
		{"source/status", map[string]any{"id": "src_nope"}, http.StatusNotFound},
		{"source/status", map[string]any{"id": id, "extra": 1}, http.StatusBadRequest},
	} {
		if st, out := ctl(t, gw.URL, ownerCreds, c.op, c.args); st != c.code {
			t.Errorf("%s %v: %d %v, want %d", c.op, c.args, st, out, c.code)
		}
	}
	// A prefix inside the attachment narrows the prefetch.
	gw.prefetch(t, map[string]any{"id": id, "prefix": "ds/k01"})
	if p := gw.waitPrefetch(t, id); p.State != source.PrefetchDone || p.TotalEntries != 1 || p.Prefix != "ds/k01" {
		t.Fatalf("narrowed prefetch: %+v", p)
	}
	if st := gw.status(t, id, true); st.LocalEntries != 1 || st.Entries != 2 {
		t.Fatalf("status: %+v", st)
	}
}

// TestPrefetchStopsOnRemove: detaching a source stops its prefetch
// before the evict, so nothing it fetched is left in the side index.
func TestPrefetchStopsOnRemove(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	dataset(t, rm, []int{1000, 2000, 3000})
	fp := startFaultProxy(t, rm.URL)
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", fp.URL, nil)["id"].(string)
	stallAfter(fp, 1)
	gw.prefetch(t, map[string]any{"id": id, "parallel": 1})
	waitFor(t, "the second GET", func() bool { return fp.gets.Load() == 2 })
	gw.owner(t, "source/remove", map[string]any{"id": id, "evict": true})
	left := 0
	must(t, gw.G.DB.View(context.Background(), func(rd kv.Reader) error {
		return rd.Scan(kv.Prefix([]byte(keyspace.SourceIndex)), func(k, _ []byte) error {
			if bytes.Contains(k, []byte(id)) {
				left++
			}
			return nil
		})
	}))
	if left != 0 {
		t.Fatalf("%d side-index records of the removed source are left", left)
	}
	if st, out := ctl(t, gw.URL, ownerCreds, "source/status", map[string]any{"id": id}); st != http.StatusNotFound {
		t.Fatalf("status of a removed source: %d %v", st, out)
	}
	rep, err := gw.G.Branches.Check(context.Background())
	must(t, err)
	if !rep.OK() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
}

// TestPrefetchOutcomeStays: once a poller sees a prefetch end, every later
// status says it ended; none goes back to running while the outcome is
// being stored. Many quick jobs, polled without a pause, make the window
// between the job's end and its stored outcome likely to be hit.
func TestPrefetchOutcomeStays(t *testing.T) {
	t.Parallel()
	gw, id := twoObjectSource(t)
	deadline := time.Now().Add(time.Minute)
	for i := range 60 {
		gw.prefetch(t, map[string]any{"id": id})
		for gw.status(t, id, false).Prefetch.State == source.PrefetchRunning {
			if time.Now().After(deadline) {
				t.Fatalf("job %d still running", i)
			}
		}
		if st := gw.status(t, id, false); st.Prefetch.State != source.PrefetchDone {
			t.Fatalf("job %d: seen done, then %+v", i, st.Prefetch)
		}
	}
}

// twoObjectSource starts a gateway with repository "data" and, attached
// at ds/, a remote bucket of two small objects; it returns the source's
// id.
func twoObjectSource(t *testing.T) (*testGW, string) {
	t.Helper()
	rm := startRemote(t)
	dataset(t, rm, []int{10, 20})
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	return gw, gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
}
