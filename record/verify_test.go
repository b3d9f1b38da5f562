package record

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentnas/nas/kv"
)

func rawGet(t testing.TB, db kv.DB, k []byte) []byte {
	t.Helper()
	var v []byte
	err := db.View(context.Background(), func(rd kv.Reader) error {
		var err error
		v, err = rd.Get(k)
		return err
	})
	if err != nil {
		t.Fatalf("raw get %q: %v", k, err)
	}
	return v
}

func rawSet(t testing.TB, db kv.DB, k, v []byte) {
	t.Helper()
	if err := db.Update(context.Background(), func(txn kv.Txn) error { return txn.Set(k, v) }); err != nil {
		t.Fatal(err)
	}
}

func rawDelete(t testing.TB, db kv.DB, k []byte) {
	t.Helper()
	if err := db.Update(context.Background(), func(txn kv.Txn) error { return txn.Delete(k) }); err != nil {
		t.Fatal(err)
	}
}

func rawEvent(t testing.TB, db kv.DB, seq uint64) Event {
	t.Helper()
	e, _, err := decodeRecord(rawGet(t, db, eventKey(seq)))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rewriteFrom is the attacker who can write the store: it edits record
// from with edit and rehashes and relinks it and every later record, and
// the head, so the chain is self-consistent.
func rewriteFrom(t testing.TB, db kv.DB, from uint64, edit func(*Event)) {
	t.Helper()
	h, err := decodeHead(rawGet(t, db, keyHead))
	if err != nil {
		t.Fatal(err)
	}
	prev := rawEvent(t, db, from-1).Hash
	if from == 1 {
		prev = Hash{}
	}
	for s := from; s <= h.Seq; s++ {
		e := rawEvent(t, db, s)
		if s == from {
			edit(&e)
		}
		e.PrevHash = prev
		rawSet(t, db, eventKey(s), seal(&e))
		prev = e.Hash
	}
	h.Hash = prev
	rawSet(t, db, keyHead, encodeHead(h))
}

// tamperLog builds a small log: ten events over two runs with a read
// manifest of two pages bound into a commit event.
func tamperLog(t testing.TB) (kv.DB, *Recorder) {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	r := New(db, Options{})
	m := NewManifests(db, ManifestOptions{BatchSize: 2})
	for i := range 3 {
		if err := m.Add(ctx, "run_1", Read{Path: "/a/" + string(rune('x'+i)), Commit: "c0", Length: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Flush(ctx, "run_1"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 10; i++ {
		e := Event{Kind: KindShareUsed, Run: "run_1", Lease: "lse_1", Repo: "docs"}
		if i%2 == 0 {
			e.Run, e.Lease = "run_2", "lse_2"
		}
		if i == 4 {
			e = Event{Kind: KindCommit, Run: "run_1", Lease: "lse_1", Repo: "docs",
				Subject: Subject{Commit: "c4"}, ReadManifest: ManifestID("run_1")}
		}
		mustAppend(t, r, e)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, r)
	return db, r
}

// TestVerifyDetectsTampering alters the store directly in every way the
// brief names and checks Verify reports it.
func TestVerifyDetectsTampering(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, db kv.DB)
		want   ProblemKind
	}{
		{"field edited", func(t *testing.T, db kv.DB) {
			e := rawEvent(t, db, 5)
			e.Purpose = "edited"
			rawSet(t, db, eventKey(5), encodeRecord(&e))
		}, ProblemHash},
		{"field edited and rehashed", func(t *testing.T, db kv.DB) {
			e := rawEvent(t, db, 5)
			e.Principal = "someone else"
			rawSet(t, db, eventKey(5), seal(&e))
		}, ProblemLink},
		{"last record edited and rehashed", func(t *testing.T, db kv.DB) {
			e := rawEvent(t, db, 10)
			e.Kind = KindDenied
			rawSet(t, db, eventKey(10), seal(&e))
		}, ProblemHead},
		{"time edited", func(t *testing.T, db kv.DB) {
			e := rawEvent(t, db, 5)
			e.Time = e.Time.Add(-time.Hour)
			rawSet(t, db, eventKey(5), encodeRecord(&e))
		}, ProblemHash},
		{"hash field edited", func(t *testing.T, db kv.DB) {
			e := rawEvent(t, db, 5)
			e.Hash[0] ^= 1
			rawSet(t, db, eventKey(5), encodeRecord(&e))
		}, ProblemHash},
		{"bytes truncated", func(t *testing.T, db kv.DB) {
			rawSet(t, db, eventKey(5), rawGet(t, db, eventKey(5))[:40])
		}, ProblemCorrupt},
		{"middle record deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, eventKey(5))
		}, ProblemGap},
		{"first record deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, eventKey(1))
		}, ProblemGap},
		{"last record deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, eventKey(10))
		}, ProblemHead},
		{"tail deleted with head rewound", func(t *testing.T, db kv.DB) {
			e9 := rawEvent(t, db, 9)
			rawDelete(t, db, eventKey(10))
			rawSet(t, db, keyHead, encodeHead(Head{Seq: 9, Hash: e9.Hash, Time: e9.Time}))
		}, ProblemIndex}, // the deleted record's index entries remain
		{"records reordered", func(t *testing.T, db kv.DB) {
			a, b := rawGet(t, db, eventKey(3)), rawGet(t, db, eventKey(4))
			rawSet(t, db, eventKey(3), b)
			rawSet(t, db, eventKey(4), a)
		}, ProblemSeq},
		{"head rewritten", func(t *testing.T, db kv.DB) {
			h, _ := decodeHead(rawGet(t, db, keyHead))
			h.Hash[3] ^= 1
			rawSet(t, db, keyHead, encodeHead(h))
		}, ProblemHead},
		{"head rewound", func(t *testing.T, db kv.DB) {
			e := rawEvent(t, db, 7)
			rawSet(t, db, keyHead, encodeHead(Head{Seq: 7, Hash: e.Hash, Time: e.Time}))
		}, ProblemHead},
		{"head deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, keyHead)
		}, ProblemHead},
		{"record appended without head", func(t *testing.T, db kv.DB) {
			last := rawEvent(t, db, 10)
			e := Event{Seq: 11, Time: last.Time, Kind: KindCommit, PrevHash: last.Hash}
			rawSet(t, db, eventKey(11), seal(&e))
		}, ProblemHead},
		{"record inserted in the middle", func(t *testing.T, db kv.DB) {
			// Shift 6..10 up by one and forge 6, linked to 5.
			for s := uint64(10); s >= 6; s-- {
				rawSet(t, db, eventKey(s+1), rawGet(t, db, eventKey(s)))
			}
			prev := rawEvent(t, db, 5)
			e := Event{Seq: 6, Time: prev.Time, Kind: KindGateDecided, PrevHash: prev.Hash,
				Decision: Decision{Effect: EffectAllow, Rule: "forged"}}
			rawSet(t, db, eventKey(6), seal(&e))
			h, _ := decodeHead(rawGet(t, db, keyHead))
			h.Seq = 11
			rawSet(t, db, keyHead, encodeHead(h))
		}, ProblemLink},
		{"record inserted and seq rewritten", func(t *testing.T, db kv.DB) {
			prev := rawEvent(t, db, 5)
			for s := uint64(10); s >= 6; s-- {
				e := rawEvent(t, db, s)
				e.Seq = s + 1
				rawSet(t, db, eventKey(s+1), encodeRecord(&e))
			}
			e := Event{Seq: 6, Time: prev.Time, Kind: KindGateDecided, PrevHash: prev.Hash}
			rawSet(t, db, eventKey(6), seal(&e))
		}, ProblemHash},
		{"index entry deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, indexKey(indexRun, "run_1", 3))
		}, ProblemIndex},
		{"index entry forged", func(t *testing.T, db kv.DB) {
			rawSet(t, db, indexKey(indexCommit, "c4", 6), nil)
		}, ProblemIndex},
		{"index entry dangling", func(t *testing.T, db kv.DB) {
			rawSet(t, db, indexKey(indexLease, "lse_1", 99), nil)
		}, ProblemIndex},
		{"stray record key", func(t *testing.T, db kv.DB) {
			rawSet(t, db, []byte("F/zz"), []byte("x"))
		}, ProblemStray},
		{"manifest page edited", func(t *testing.T, db kv.DB) {
			v := rawGet(t, db, pageKey("run_1", 1))
			v[3] ^= 1 // a byte of the first path
			rawSet(t, db, pageKey("run_1", 1), v)
		}, ProblemManifest},
		{"manifest page deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, pageKey("run_1", 2))
		}, ProblemManifest},
		{"manifest summary rewritten", func(t *testing.T, db kv.DB) {
			s, _ := decodeSummary("run_1", rawGet(t, db, summaryKey("run_1")))
			s.Bytes++
			rawSet(t, db, summaryKey("run_1"), encodeSummary(&s))
		}, ProblemManifest},
		{"manifest rewritten consistently", func(t *testing.T, db kv.DB) {
			// Replace page 1 and recompute the summary: only the
			// binding in the commit event still knows the truth.
			_, page := encodePage([]Read{{Path: "/innocent", Length: 10}, {Path: "/b", Length: 10}}, 10)
			rawSet(t, db, pageKey("run_1", 1), page)
			s, _ := decodeSummary("run_1", rawGet(t, db, summaryKey("run_1")))
			s.Hash = chainPage(chainPage(Hash{}, page), rawGet(t, db, pageKey("run_1", 2)))
			rawSet(t, db, summaryKey("run_1"), encodeSummary(&s))
		}, ProblemManifest},
		{"manifest deleted", func(t *testing.T, db kv.DB) {
			rawDelete(t, db, pageKey("run_1", 1))
			rawDelete(t, db, pageKey("run_1", 2))
			rawDelete(t, db, summaryKey("run_1"))
		}, ProblemManifest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, r := tamperLog(t)
			tc.tamper(t, db)
			var seen []Problem
			rep, err := r.Verify(context.Background(), func(p Problem) { seen = append(seen, p) })
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() || rep.Problems != uint64(len(seen)) {
				t.Fatalf("report %+v, callback saw %d", rep, len(seen))
			}
			if !slices.ContainsFunc(seen, func(p Problem) bool { return p.Kind == tc.want }) {
				t.Fatalf("want a %s problem, got %v", tc.want, seen)
			}
			t.Logf("%v", seen)
		})
	}
}
