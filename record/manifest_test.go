package record

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentnas/nas/kv"
)

var t0 = time.Date(2026, 11, 12, 9, 0, 0, 0, time.UTC)

func rd(path string, off, n int64, hashes ...string) Read {
	return Read{Path: path, Commit: "c1", Offset: off, Length: n, ContentHashes: hashes, Time: t0.Add(time.Duration(off))}
}

func TestCoalesce(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Read
		want []Read
	}{
		{"sequential", []Read{rd("/a", 0, 10, "h1"), rd("/a", 10, 10, "h1"), rd("/a", 20, 5, "h2")},
			[]Read{rd("/a", 0, 25, "h1", "h2")}},
		{"overlapping", []Read{rd("/a", 0, 10), rd("/a", 5, 10)}, []Read{rd("/a", 0, 15)}},
		{"contained", []Read{rd("/a", 0, 100), rd("/a", 5, 10)}, []Read{rd("/a", 0, 100)}},
		{"gap", []Read{rd("/a", 0, 10), rd("/a", 11, 10)}, []Read{rd("/a", 0, 10), rd("/a", 11, 10)}},
		{"out of order", []Read{rd("/a", 20, 10, "h3"), rd("/a", 0, 10, "h1"), rd("/a", 10, 10, "h2")},
			[]Read{rd("/a", 0, 30, "h1", "h2", "h3")}},
		{"interleaved files", []Read{rd("/a", 0, 10), rd("/b", 0, 10), rd("/a", 10, 10), rd("/b", 10, 10)},
			[]Read{rd("/a", 0, 20), rd("/b", 0, 20)}},
		{"stat then read", []Read{rd("/a", 0, 0), rd("/a", 0, 10)}, []Read{rd("/a", 0, 10)}},
		{"other commit", []Read{rd("/a", 0, 10), {Path: "/a", Commit: "c2", Offset: 10, Length: 10, Time: t0.Add(10)}},
			[]Read{rd("/a", 0, 10), {Path: "/a", Commit: "c2", Offset: 10, Length: 10, Time: t0.Add(10)}}},
		{"other etag", []Read{rd("/a", 0, 10), {Path: "/a", Commit: "c1", ETag: "e", Offset: 10, Length: 10, Time: t0.Add(10)}},
			[]Read{rd("/a", 0, 10), {Path: "/a", Commit: "c1", ETag: "e", Offset: 10, Length: 10, Time: t0.Add(10)}}},
		{"order of first read kept", []Read{rd("/b", 50, 10), rd("/a", 0, 10), rd("/b", 0, 50)},
			[]Read{rd("/b", 0, 60), rd("/a", 0, 10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := coalesce(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMergeRespectsHashLimit(t *testing.T) {
	a := rd("/a", 0, 10)
	for i := range MaxContentHashes {
		a.ContentHashes = append(a.ContentHashes, fmt.Sprint(i))
	}
	b := rd("/a", 10, 10, "new")
	if mergeInto(&a, &b) {
		t.Fatal("merged past MaxContentHashes")
	}
	c := rd("/a", 10, 10, "7")
	if !mergeInto(&a, &c) || a.Length != 20 {
		t.Fatal("did not merge a known hash")
	}
}

func readAll(t testing.TB, r *Recorder, run string) []Read {
	t.Helper()
	var out []Read
	if err := r.ReadManifest(context.Background(), run, func(x Read) error {
		out = append(out, x)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestManifestSequentialRead: a large file read in 4 KiB pieces is one
// entry.
func TestManifestSequentialRead(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{})
	for i := range int64(1000) {
		if err := m.Add(ctx, "run_1", Read{Path: "/big", Commit: "c1", ETag: `"e"`, Offset: i * 4096, Length: 4096,
			ContentHashes: []string{fmt.Sprintf("sha256:%d", i/256)}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.Buffered(); n != 1 {
		t.Fatalf("buffered %d entries, want 1", n)
	}
	if err := m.Flush(ctx, "run_1"); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, r, "run_1")
	if len(got) != 1 || got[0].Offset != 0 || got[0].Length != 4096*1000 || len(got[0].ContentHashes) != 4 {
		t.Fatalf("manifest %+v", got)
	}
	s, err := r.ManifestSummary(ctx, "run_1")
	if err != nil || s.Entries != 1 || s.Bytes != 4096*1000 || s.Pages != 1 || s.ID != "rm_run_1" {
		t.Fatalf("summary %+v, %v", s, err)
	}
	mustVerify(t, r)
}

func TestManifestPagesAndOrder(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{BatchSize: 10})
	var want []string
	for flush := range 3 {
		for i := range 25 {
			p := fmt.Sprintf("/f/%d/%02d", flush, i)
			want = append(want, p)
			if err := m.Add(ctx, "run_1", Read{Path: p, Length: 1}); err != nil {
				t.Fatal(err)
			}
			if err := m.Add(ctx, "run_2", Read{Path: p, Length: 2}); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, x := range readAll(t, r, "run_1") {
		got = append(got, x.Path)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order\n got %v\nwant %v", got, want)
	}
	s, err := r.ManifestSummary(ctx, "run_2")
	if err != nil || s.Pages != 9 || s.Entries != 75 || s.Bytes != 150 {
		t.Fatalf("summary %+v, %v", s, err)
	}
	if _, err := r.ManifestSummary(ctx, "run_3"); !errors.Is(err, ErrNoSuchManifest) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing summary: %v", err)
	}
	if got := readAll(t, r, "run_3"); len(got) != 0 {
		t.Fatalf("run_3: %v", got)
	}
	n := 0
	if err := r.ReadManifest(ctx, "run_1", func(Read) error { n++; return ErrStop }); err != nil || n != 1 {
		t.Fatalf("ErrStop: %d, %v", n, err)
	}
	rep := mustVerify(t, r)
	if rep.Manifests != 2 || rep.ManifestPages != 18 {
		t.Fatalf("report %+v", rep)
	}
}

func TestManifestAddRejects(t *testing.T) {
	m := NewManifests(openDB(t), ManifestOptions{})
	ctx := context.Background()
	many := make([]string, MaxContentHashes+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, tc := range []struct {
		name string
		run  string
		r    Read
	}{
		{"empty run", "", Read{Path: "/a"}},
		{"empty path", "run", Read{}},
		{"negative offset", "run", Read{Path: "/a", Offset: -1}},
		{"negative length", "run", Read{Path: "/a", Length: -1}},
		{"overflow", "run", Read{Path: "/a", Offset: 1 << 62, Length: 1 << 62}},
		{"too many hashes", "run", Read{Path: "/a", ContentHashes: many}},
		{"long hash", "run", Read{Path: "/a", ContentHashes: []string{string(make([]byte, MaxContentHashLen+1))}}},
		{"invalid utf8", "run", Read{Path: "/\xff"}},
		{"time out of range", "run", Read{Path: "/a", Time: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.Add(ctx, tc.run, tc.r); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Add = %v, want ErrInvalid", err)
			}
		})
	}
}

// TestManifestFullBufferFlushes: without Run, a full buffer flushes in Add.
func TestManifestFullBufferFlushes(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{MaxBuffered: 10})
	for i := range 9 {
		if err := m.Add(ctx, "run_1", Read{Path: fmt.Sprint("/", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if m.Buffered() != 9 {
		t.Fatalf("buffered %d", m.Buffered())
	}
	if err := m.Add(ctx, "run_1", Read{Path: "/9"}); err != nil {
		t.Fatal(err)
	}
	if m.Buffered() != 0 || len(readAll(t, r, "run_1")) != 10 {
		t.Fatalf("buffered %d after a full Add", m.Buffered())
	}
	// The byte bound too.
	m2 := NewManifests(db, ManifestOptions{MaxBufferedBytes: 1000})
	for i := 0; m2.Buffered() < 20; i++ {
		if err := m2.Add(ctx, "run_2", Read{Path: fmt.Sprint("/", i, string(make([]byte, 200)))}); err != nil {
			t.Fatal(err)
		}
		if i > 20 {
			break
		}
	}
	if m2.Buffered() >= 5 {
		t.Fatalf("byte bound not enforced: %d buffered", m2.Buffered())
	}
}

func TestManifestCloseFlushes(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{FlushInterval: time.Hour})
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	for i := range 5 {
		if err := m.Add(ctx, "run_1", Read{Path: fmt.Sprint("/", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// nil when Close stopped Run, ErrClosed when Run started after Close.
	if err := <-done; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("Run = %v", err)
	}
	if got := readAll(t, r, "run_1"); len(got) != 5 {
		t.Fatalf("after Close: %d reads", len(got))
	}
	if err := m.Add(ctx, "run_1", Read{Path: "/x"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v", err)
	}
	if err := m.Run(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close = %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestManifestRunFlushes: Run flushes by age and, early, by count.
func TestManifestRunFlushes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    ManifestOptions
		reads   int
		byClose bool
	}{
		{"by age", ManifestOptions{FlushInterval: 20 * time.Millisecond}, 3, false},
		{"by count", ManifestOptions{FlushInterval: time.Hour, BatchSize: 8}, 8, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			db := openDB(t)
			r := New(db, Options{})
			m := NewManifests(db, tc.opts)
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			for i := range tc.reads {
				if err := m.Add(ctx, "run_1", Read{Path: fmt.Sprint("/", i)}); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "flush", func() bool { return m.Buffered() == 0 && len(readAll(t, r, "run_1")) == tc.reads })
			// Run has started: Close stops it with nil, cancelling ctx
			// with ctx's error.
			if tc.byClose {
				if err := m.Close(); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("Run = %v", err)
				}
				return
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v", err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// flakyDB fails Update while failing is set.
type flakyDB struct {
	kv.DB
	failing atomic.Bool
}

var errFlaky = errors.New("disk on fire")

func (f *flakyDB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	if f.failing.Load() {
		return errFlaky
	}
	return f.DB.Update(ctx, fn)
}

// TestManifestFlushFailureKeepsReads: reads that could not be written stay
// buffered, in order, and go out with the next flush.
func TestManifestFlushFailureKeepsReads(t *testing.T) {
	ctx := context.Background()
	db := &flakyDB{DB: openDB(t)}
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{})
	add := func(p string) {
		if err := m.Add(ctx, "run_1", Read{Path: p}); err != nil {
			t.Fatal(err)
		}
	}
	add("/1")
	add("/2")
	db.failing.Store(true)
	if err := m.Flush(ctx, "run_1"); !errors.Is(err, errFlaky) {
		t.Fatalf("Flush = %v", err)
	}
	add("/3")
	if m.Buffered() != 3 {
		t.Fatalf("buffered %d", m.Buffered())
	}
	if err := m.Close(); !errors.Is(err, errFlaky) {
		t.Fatalf("Close = %v", err)
	}
	if err := m.Add(ctx, "run_1", Read{Path: "/4"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close = %v", err)
	}
	db.failing.Store(false)
	if err := m.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range readAll(t, r, "run_1") {
		got = append(got, x.Path)
	}
	if fmt.Sprint(got) != "[/1 /2 /3]" {
		t.Fatalf("manifest %v", got)
	}
}

// TestManifestConcurrent: many readers over several runs with Run going;
// every read arrives and the manifests verify.
func TestManifestConcurrent(t *testing.T) {
	const workers, each = 8, 300
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := openDB(t)
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{FlushInterval: 5 * time.Millisecond, BatchSize: 32, MaxBuffered: 200})
	go m.Run(ctx)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			run := fmt.Sprint("run_", w%3)
			for i := range each {
				// Every other 4 KiB block: nothing merges.
				if err := m.Add(ctx, run, Read{Path: fmt.Sprint("/w", w), Offset: int64(i) * 8192, Length: 4096}); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 0 {
					if _, err := r.Append(ctx, Event{Kind: KindCommit, Run: run, ReadManifest: ManifestID(run)}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var entries, bytes uint64
	for i := range 3 {
		s, err := r.ManifestSummary(ctx, fmt.Sprint("run_", i))
		if err != nil {
			t.Fatal(err)
		}
		entries += s.Entries
		bytes += s.Bytes
	}
	if entries != workers*each || bytes != workers*each*4096 {
		t.Fatalf("%d entries, %d bytes", entries, bytes)
	}
	mustVerify(t, r)
}

// TestManifestBinding: an event naming a manifest records its state.
func TestManifestBinding(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	e := mustAppend(t, r, Event{Kind: KindCommit, Run: "run_1", ReadManifest: ManifestID("run_1"),
		Details: map[string]string{DetailManifestPages: "99"}})
	if e.Details[DetailManifestPages] != "0" || e.Details[DetailManifestHash] != (Hash{}).String() {
		t.Fatalf("empty binding %v", e.Details)
	}
	m := NewManifests(db, ManifestOptions{})
	if err := m.Add(ctx, "run_1", Read{Path: "/a"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx, "run_1"); err != nil {
		t.Fatal(err)
	}
	s, _ := r.ManifestSummary(ctx, "run_1")
	e = mustAppend(t, r, Event{Kind: KindCommit, Run: "run_1", ReadManifest: ManifestID("run_1")})
	if e.Details[DetailManifestPages] != "1" || e.Details[DetailManifestHash] != s.Hash.String() {
		t.Fatalf("binding %v, summary %+v", e.Details, s)
	}
	if e := mustAppend(t, r, Event{Kind: KindCommit, ReadManifest: "not-a-manifest-id"}); len(e.Details) != 0 {
		t.Fatalf("binding for a foreign ID: %v", e.Details)
	}
	mustVerify(t, r)
}

// TestManifestBufferBounded: while flushes fail, a full buffer flushes in
// Add and returns the error, and at twice its bound refuses reads.
func TestManifestBufferBounded(t *testing.T) {
	ctx := context.Background()
	db := &flakyDB{DB: openDB(t)}
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{MaxBuffered: 4})
	db.failing.Store(true)
	for i := range 8 {
		err := m.Add(ctx, "run_1", Read{Path: fmt.Sprint("/", i)})
		if i >= 3 && !errors.Is(err, errFlaky) || i < 3 && err != nil {
			t.Fatalf("Add %d = %v", i, err)
		}
	}
	if m.Buffered() != 8 {
		t.Fatalf("buffered %d", m.Buffered())
	}
	if err := m.Add(ctx, "run_1", Read{Path: "/8"}); !errors.Is(err, errFlaky) || m.Buffered() != 8 {
		t.Fatalf("Add past the bound = %v, buffered %d", err, m.Buffered())
	}
	db.failing.Store(false)
	if err := m.Add(ctx, "run_1", Read{Path: "/9"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx, "run_1"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r, "run_1"); len(got) != 9 || got[8].Path != "/9" {
		t.Fatalf("manifest %v", got)
	}
}
