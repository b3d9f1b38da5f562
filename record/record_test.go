package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/kv"
)

func openDB(t testing.TB) kv.DB {
	t.Helper()
	db, err := kv.OpenBadger(t.TempDir(), kv.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// specEvent is the record sketched in the specification.
func specEvent() Event {
	return Event{
		Kind: KindCommit, Run: "run_91ab", Principal: "agt_cleo", OnBehalfOf: "usr_wei",
		Lease: "lse_7Qk3", Purpose: "Draft the Q4 release notes", Repo: "shared", Branch: "cleo/run_91ab",
		Subject:      Subject{Path: "/shared/launch/notes.md", Commit: "91ce3a7"},
		ReadManifest: "rm_5d2e",
		Decision:     Decision{Effect: EffectAllow, Rule: "r-17"},
	}
}

func mustAppend(t testing.TB, r *Recorder, e Event) Event {
	t.Helper()
	out, err := r.Append(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustVerify(t testing.TB, r *Recorder) VerifyReport {
	t.Helper()
	rep, err := r.Verify(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %d problems: %v", rep.Problems, rep.FirstProblems)
	}
	return rep
}

func TestAppendAssignsChain(t *testing.T) {
	ctx := context.Background()
	r := New(openDB(t), Options{})
	var prev Event
	for i := 1; i <= 5; i++ {
		e := mustAppend(t, r, Event{Kind: KindDenied, Run: "run_1", Seq: 99, Hash: Hash{1}})
		if e.Seq != uint64(i) {
			t.Fatalf("seq %d, want %d", e.Seq, i)
		}
		if i == 1 && !e.PrevHash.IsZero() {
			t.Fatalf("first prev_hash %s, want genesis", e.PrevHash)
		}
		if i > 1 && e.PrevHash != prev.Hash {
			t.Fatalf("record %d links to %s, want %s", i, e.PrevHash, prev.Hash)
		}
		if e.Time.Location() != time.UTC || e.Time.IsZero() {
			t.Fatalf("time %v", e.Time)
		}
		got, err := r.Get(ctx, e.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if !eventsEqual(got, e) {
			t.Fatalf("Get = %+v, Append returned %+v", got, e)
		}
		prev = e
	}
	h, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq != 5 || h.Hash != prev.Hash || !h.Time.Equal(prev.Time) {
		t.Fatalf("head %+v, last %+v", h, prev)
	}
	if _, err := r.Get(ctx, 6); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(6) = %v, want ErrNotFound", err)
	}
	mustVerify(t, r)
}

func eventsEqual(a, b Event) bool {
	return bytes.Equal(encodeRecord(&a), encodeRecord(&b)) && a.Time.Equal(b.Time)
}

func TestEmptyLog(t *testing.T) {
	r := New(openDB(t), Options{})
	h, err := r.Head(context.Background())
	if err != nil || h.Seq != 0 || !h.Hash.IsZero() {
		t.Fatalf("Head = %+v, %v", h, err)
	}
	rep := mustVerify(t, r)
	if rep.Records != 0 {
		t.Fatalf("records %d", rep.Records)
	}
}

func TestAppendRejectsInvalid(t *testing.T) {
	big := strings.Repeat("x", MaxFieldSize+1)
	many := map[string]string{}
	for i := range MaxDetails + 1 {
		many[fmt.Sprint(i)] = "v"
	}
	wide := map[string]string{}
	for i := range 5 {
		wide[fmt.Sprint(i)] = strings.Repeat("y", MaxFieldSize)
	}
	for _, tc := range []struct {
		name string
		e    Event
	}{
		{"empty kind", Event{}},
		{"field too big", Event{Kind: KindCommit, Purpose: big}},
		{"invalid utf8", Event{Kind: KindCommit, Run: "\xff"}},
		{"too many details", Event{Kind: KindCommit, Details: many}},
		{"empty details key", Event{Kind: KindCommit, Details: map[string]string{"": "v"}}},
		{"record too big", Event{Kind: KindCommit, Details: wide}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(openDB(t), Options{})
			if _, err := r.Append(context.Background(), tc.e); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Append = %v, want ErrInvalid", err)
			}
			err := r.db.Update(context.Background(), func(txn kv.Txn) error {
				_, err := r.AppendTxn(txn, tc.e)
				return err
			})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("AppendTxn = %v, want ErrInvalid", err)
			}
			if h, _ := r.Head(context.Background()); h.Seq != 0 {
				t.Fatalf("head moved to %d", h.Seq)
			}
		})
	}
}

// TestCanonicalEncoding pins format 1 byte by byte, built here from the
// description in doc.go rather than from the encoder.
func TestCanonicalEncoding(t *testing.T) {
	e := Event{
		Seq: 300, Time: time.Date(2026, 11, 12, 9, 14, 22, 5, time.UTC), Kind: KindCommit,
		Run: "run_1", Subject: Subject{Commit: "c1"}, Decision: Decision{Effect: EffectAllow},
		Details:  map[string]string{"zeta": "1", "alpha": "22"},
		PrevHash: Hash{0xab},
	}
	var want []byte
	want = append(want, 1)
	want = binary.BigEndian.AppendUint64(want, 300)
	want = binary.BigEndian.AppendUint64(want, uint64(e.Time.UnixNano()))
	want = append(want, e.PrevHash[:]...)
	for _, s := range []string{"commit", "run_1", "", "", "", "", "", "", "", "c1", "", "allow", "", "", ""} {
		want = append(want, byte(len(s)))
		want = append(want, s...)
	}
	want = append(want, 2, 5, 'a', 'l', 'p', 'h', 'a', 2, '2', '2', 4, 'z', 'e', 't', 'a', 1, '1')
	if got := appendBody(nil, &e); !bytes.Equal(got, want) {
		t.Fatalf("body\n got %x\nwant %x", got, want)
	}
	if n := encodedSize(&e); n != len(want) {
		t.Fatalf("encodedSize %d, want %d", n, len(want))
	}
	v := seal(&e)
	if e.Hash != sha256.Sum256(want) || !bytes.Equal(v, append(want, e.Hash[:]...)) {
		t.Fatal("hash is not SHA-256 of the body, or the value is not body||hash")
	}
	d, body, err := decodeRecord(v)
	if err != nil || !bytes.Equal(body, want) || !eventsEqual(d, e) {
		t.Fatalf("decode: %v", err)
	}
}

func TestRecordSize(t *testing.T) {
	e := specEvent()
	e.Seq = 18211
	if n := len(encodeRecord(&e)); n != 225 {
		t.Fatalf("spec record is %d bytes, doc.go says 225", n)
	}
	if n := len(encodeRecord(&Event{})); n != 97 {
		t.Fatalf("empty record is %d bytes, doc.go says 97", n)
	}
}

func TestDecodeRejectsNonCanonical(t *testing.T) {
	e := Event{Kind: KindCommit, Details: map[string]string{"a": "1", "b": "2"}}
	v := seal(&e)
	body := v[:len(v)-32]
	nonMinimal := append(append(bytes.Clone(body[:fixedBodySize]), 0x86, 0x00), body[fixedBodySize+1:]...)
	swapped := bytes.Replace(bytes.Clone(body), []byte{1, 'a', 1, '1', 1, 'b', 1, '2'}, []byte{1, 'b', 1, '2', 1, 'a', 1, '1'}, 1)
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"short", v[:10]},
		{"format", append([]byte{2}, v[1:]...)},
		{"non-minimal varint", append(nonMinimal, e.Hash[:]...)},
		{"unsorted details", append(swapped, e.Hash[:]...)},
		{"trailing", append(append(bytes.Clone(body), 0), e.Hash[:]...)},
		{"huge details count", append(append(bytes.Clone(body[:len(body)-9]), 0xff, 0xff, 0x03), e.Hash[:]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decodeRecord(tc.v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestEventJSON(t *testing.T) {
	r := New(openDB(t), Options{})
	in := specEvent()
	in.ReadManifest = ""
	in.Details = map[string]string{"b": "2", "a": "1"}
	e := mustAppend(t, r, in)
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"seq":1`, `"kind":"commit"`, `"on_behalf_of":"usr_wei"`,
		`"subject":{"path":"/shared/launch/notes.md","commit":"91ce3a7"}`,
		`"decision":{"effect":"allow","rule":"r-17"}`, `"details":{"a":"1","b":"2"}`,
		`"prev_hash":"sha256:` + strings.Repeat("0", 64) + `"`, `"hash":"sha256:`,
		`"time":"` + e.Time.Format(time.RFC3339Nano) + `"`} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "read_manifest") || strings.Contains(s, "version_id") {
		t.Errorf("JSON has empty fields:\n%s", s)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !eventsEqual(back, e) {
		t.Fatalf("JSON round trip: %+v != %+v", back, e)
	}
	if _, err := ParseHash("sha256:zz"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ParseHash = %v", err)
	}
}

// TestTimeNeverRunsBackwards: a clock stepping back does not reorder time.
func TestTimeNeverRunsBackwards(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []time.Duration{10, 5, 20, 1, 30}
	i := 0
	r := New(openDB(t), Options{Now: func() time.Time {
		d := steps[i%len(steps)]
		i++
		return base.Add(d * time.Second)
	}})
	var last time.Time
	for range steps {
		e := mustAppend(t, r, Event{Kind: KindDenied})
		if e.Time.Before(last) {
			t.Fatalf("seq %d time %v before %v", e.Seq, e.Time, last)
		}
		last = e.Time
	}
	mustVerify(t, r)
}

// TestConcurrentAppend: appends from many goroutines, through Append and
// AppendTxn, give gapless seqs and a chain that verifies.
func TestConcurrentAppend(t *testing.T) {
	const workers, each = 8, 200
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				e := Event{Kind: KindShareUsed, Run: fmt.Sprintf("run_%d", w), Details: map[string]string{"i": fmt.Sprint(i)}}
				var out Event
				var err error
				if w%4 == 3 {
					err = r.Update(ctx, func(txn kv.Txn) error {
						out, err = r.AppendTxn(txn, e)
						return err
					})
				} else {
					out, err = r.Append(ctx, e)
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if seen[out.Seq] {
					mu.Unlock()
					errs <- fmt.Errorf("seq %d handed out twice", out.Seq)
					return
				}
				seen[out.Seq] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s := uint64(1); s <= workers*each; s++ {
		if !seen[s] {
			t.Fatalf("seq %d missing", s)
		}
	}
	rep := mustVerify(t, r)
	if rep.Records != workers*each || rep.Head.Seq != workers*each {
		t.Fatalf("report %+v", rep)
	}
	// Each run's events come back in the order they were appended.
	for w := range workers {
		next := 0
		err := r.List(ctx, Filter{Run: fmt.Sprintf("run_%d", w)}, func(e Event) error {
			if e.Details["i"] != fmt.Sprint(next) {
				return fmt.Errorf("run_%d: event %s, want %d", w, e.Details["i"], next)
			}
			next++
			return nil
		})
		if err != nil || next != each {
			t.Fatalf("run_%d: %d events, %v", w, next, err)
		}
	}
}

// TestAppendCancelled: a cancelled context fails before anything is
// written.
func TestAppendCancelled(t *testing.T) {
	r := New(openDB(t), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Append(ctx, Event{Kind: KindCommit}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append = %v", err)
	}
	if h, _ := r.Head(context.Background()); h.Seq != 0 {
		t.Fatalf("head %d", h.Seq)
	}
}

// TestAppendTxnRolledBack: a record written with AppendTxn disappears with
// the caller's failed transaction, and the chain stays intact.
func TestAppendTxnRolledBack(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	mustAppend(t, r, Event{Kind: KindLeaseIssued, Run: "run_1", Lease: "lse_1"})
	boom := errors.New("action failed")
	err := db.Update(ctx, func(txn kv.Txn) error {
		if _, err := r.AppendTxn(txn, Event{Kind: KindDelete, Run: "run_1", Subject: Subject{Commit: "c9"}}); err != nil {
			return err
		}
		if err := txn.Set([]byte("action"), []byte("done")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v", err)
	}
	if _, err := r.Get(ctx, 2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get(2) = %v, want ErrNotFound", err)
	}
	err = db.View(ctx, func(rd kv.Reader) error {
		_, err := rd.Get([]byte("action"))
		return err
	})
	if !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("action key: %v", err)
	}
	n := 0
	if err := r.List(ctx, Filter{Commit: "c9"}, func(Event) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("commit index: %d, %v", n, err)
	}
	if e := mustAppend(t, r, Event{Kind: KindCommit}); e.Seq != 2 {
		t.Fatalf("next seq %d", e.Seq)
	}
	mustVerify(t, r)

	// And the committed case: record and action together.
	var rec Event
	err = db.Update(ctx, func(txn kv.Txn) error {
		var err error
		if rec, err = r.AppendTxn(txn, Event{Kind: KindDelete, Run: "run_1"}); err != nil {
			return err
		}
		return txn.Set([]byte("action"), []byte("done"))
	})
	if err != nil || rec.Seq != 3 {
		t.Fatalf("Update = %v, seq %d", err, rec.Seq)
	}
	if got, err := r.Get(ctx, 3); err != nil || got.Hash != rec.Hash {
		t.Fatalf("Get(3) = %v", err)
	}
	mustVerify(t, r)
}

func TestList(t *testing.T) {
	ctx := context.Background()
	r := New(openDB(t), Options{})
	type spec struct {
		kind             Kind
		run, lease, repo string
		commit           string
	}
	specs := []spec{
		{KindLeaseIssued, "run_a", "lse_a", "", ""},
		{KindCommit, "run_a", "lse_a", "docs", "c1"},
		{KindDenied, "run_b", "lse_b", "docs", ""},
		{KindCommit, "run_b", "lse_b", "code", "c2"},
		{KindGateDecided, "", "", "docs", "c1"},
		{KindMerge, "run_a", "lse_a", "docs", "c3"},
		{KindLeaseRevoked, "run_a", "lse_a", "", ""},
	}
	for _, s := range specs {
		mustAppend(t, r, Event{Kind: s.kind, Run: s.run, Lease: s.lease, Repo: s.repo, Subject: Subject{Commit: s.commit}})
	}
	for _, tc := range []struct {
		name string
		f    Filter
		want []uint64
	}{
		{"all", Filter{}, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"from", Filter{From: 5}, []uint64{5, 6, 7}},
		{"limit", Filter{Limit: 2}, []uint64{1, 2}},
		{"run", Filter{Run: "run_a"}, []uint64{1, 2, 6, 7}},
		{"run from", Filter{Run: "run_a", From: 3}, []uint64{6, 7}},
		{"run limit", Filter{Run: "run_a", Limit: 3}, []uint64{1, 2, 6}},
		{"lease", Filter{Lease: "lse_b"}, []uint64{3, 4}},
		{"commit", Filter{Commit: "c1"}, []uint64{2, 5}},
		{"repo", Filter{Repo: "docs"}, []uint64{2, 3, 5, 6}},
		{"kinds", Filter{Kinds: []Kind{KindCommit, KindMerge}}, []uint64{2, 4, 6}},
		{"run and kind", Filter{Run: "run_a", Kinds: []Kind{KindCommit}}, []uint64{2}},
		{"commit and run", Filter{Commit: "c1", Run: "run_a"}, []uint64{2}},
		{"no match", Filter{Run: "run_z"}, nil},
		{"prefix is not a match", Filter{Run: "run_"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []uint64
			err := r.List(ctx, tc.f, func(e Event) error {
				got = append(got, e.Seq)
				return nil
			})
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	t.Run("paging", func(t *testing.T) {
		var got []uint64
		f := Filter{Run: "run_a", Limit: 1}
		for {
			n := 0
			err := r.List(ctx, f, func(e Event) error {
				got = append(got, e.Seq)
				f.From = e.Seq + 1
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		if fmt.Sprint(got) != "[1 2 6 7]" {
			t.Fatalf("paged %v", got)
		}
	})
	t.Run("callback error", func(t *testing.T) {
		stop := errors.New("stop")
		if err := r.List(ctx, Filter{}, func(Event) error { return stop }); !errors.Is(err, stop) {
			t.Fatalf("List = %v", err)
		}
		if err := r.List(ctx, Filter{}, func(Event) error { return ErrStop }); err != nil {
			t.Fatalf("List = %v", err)
		}
	})
}

func TestIndexKeyEscaping(t *testing.T) {
	for _, v := range []string{"", "a", "a\x00", "a\x00b", "\x00\x01", "\xff\x00\xff"} {
		k := indexKey(indexRun, v, 42)
		f, got, seq, ok := parseIndexKey(k)
		if !ok || f != indexRun || got != v || seq != 42 {
			t.Fatalf("%q: parsed %v %q %d %v", v, ok, got, seq, ok)
		}
	}
	// A value is never a prefix of another value's entries.
	if bytes.HasPrefix(indexKey(indexRun, "ab", 1), indexPrefix(indexRun, "a")) {
		t.Fatal("prefix of a longer value")
	}
	if bytes.HasPrefix(indexKey(indexRun, "a\x00", 1), indexPrefix(indexRun, "a")) {
		t.Fatal("prefix of a value with a zero byte")
	}
}

// TestCheckAnchor: a tail rewritten consistently passes Verify but not an
// anchor taken before.
func TestCheckAnchor(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	for range 5 {
		mustAppend(t, r, Event{Kind: KindCommit, Run: "run_1"})
	}
	anchor, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckAnchor(ctx, anchor); err != nil {
		t.Fatal(err)
	}
	mid, _ := r.Get(ctx, 3)
	if err := r.CheckAnchor(ctx, Head{Seq: 3, Hash: mid.Hash}); err != nil {
		t.Fatal(err)
	}
	// Rewrite records 3..5 with a different purpose, relinking everything.
	rewriteFrom(t, db, 3, func(e *Event) { e.Purpose = "nothing to see" })
	mustVerify(t, r)
	if err := r.CheckAnchor(ctx, anchor); !errors.Is(err, ErrTampered) {
		t.Fatalf("CheckAnchor = %v, want ErrTampered", err)
	}
	rawDelete(t, db, eventKey(5))
	if err := r.CheckAnchor(ctx, anchor); !errors.Is(err, ErrTampered) {
		t.Fatalf("CheckAnchor of deleted record = %v, want ErrTampered", err)
	}
}

// TestAppendFailure: when the store refuses the write, every caller of the
// batch learns it and nothing is recorded.
func TestAppendFailure(t *testing.T) {
	ctx := context.Background()
	db := &flakyDB{DB: openDB(t)}
	r := New(db, Options{})
	mustAppend(t, r, Event{Kind: KindCommit})
	db.failing.Store(true)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := r.Append(ctx, Event{Kind: KindDelete}); !errors.Is(err, errFlaky) {
				t.Errorf("Append = %v, want the store's error", err)
			}
		})
	}
	wg.Wait()
	db.failing.Store(false)
	if e := mustAppend(t, r, Event{Kind: KindCommit}); e.Seq != 2 {
		t.Fatalf("seq %d after failures", e.Seq)
	}
	mustVerify(t, r)
}
