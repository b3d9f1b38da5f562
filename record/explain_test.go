package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// explainScenario: run_91ab under lse_7Qk3 reads two files, commits c_aaaa1
// into repo docs, asks for a gate, a human approves, and the merge lands;
// another run does unrelated work meanwhile.
func explainScenario(t *testing.T, opts Options) *Recorder {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	r := New(db, opts)
	m := NewManifests(db, ManifestOptions{})
	run := "run_91ab"
	base := Event{Run: run, Principal: "agt_cleo", OnBehalfOf: "usr_wei", Lease: "lse_7Qk3",
		Purpose: "Draft the Q4 release notes", Repo: "docs", Branch: "cleo/run_91ab"}
	with := func(k Kind, f func(*Event)) Event {
		e := base
		e.Kind = k
		if f != nil {
			f(&e)
		}
		return e
	}
	mustAppend(t, r, with(KindLeaseIssued, nil))
	mustAppend(t, r, Event{Kind: KindLeaseIssued, Run: "run_other", Lease: "lse_other", Repo: "docs"})
	for i := range int64(10) {
		if err := m.Add(ctx, run, Read{Path: "/shared/launch/plan.md", Commit: "c_base", Offset: i * 100, Length: 100}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Add(ctx, run, Read{Path: "/web/page.html", VersionID: "v1", Length: 5000, ETag: `"x"`}); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx, run); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, r, with(KindDenied, func(e *Event) {
		e.Subject.Path = "/secret"
		e.Decision = Decision{Effect: EffectNotFound, Rule: "small-world"}
	}))
	mustAppend(t, r, with(KindCommit, func(e *Event) {
		e.Subject.Commit = "c_aaaa1"
		e.ReadManifest = ManifestID(run)
	}))
	mustAppend(t, r, Event{Kind: KindCommit, Run: "run_other", Repo: "docs", Subject: Subject{Commit: "c_aaab2"}})
	mustAppend(t, r, with(KindGateRequested, func(e *Event) { e.Subject.Commit = "c_aaaa1" }))
	mustAppend(t, r, Event{Kind: KindGateDecided, Principal: "usr_wei", Repo: "docs",
		Subject: Subject{Commit: "c_aaaa1"}, Decision: Decision{Effect: EffectAllow, Rule: "human"}})
	mustAppend(t, r, with(KindMerge, func(e *Event) { e.Subject.Commit = "c_aaaa1"; e.Branch = "main" }))
	mustAppend(t, r, with(KindLeaseRevoked, nil))
	mustAppend(t, r, Event{Kind: KindCommit, Repo: "code", Subject: Subject{Commit: "c_aaaa1"}})
	return r
}

func seqs(es []Event) string {
	var s []string
	for _, e := range es {
		s = append(s, fmt.Sprintf("%d:%s", e.Seq, e.Kind))
	}
	return strings.Join(s, " ")
}

func TestExplain(t *testing.T) {
	ctx := context.Background()
	r := explainScenario(t, Options{})
	for _, commit := range []string{"c_aaaa1", "c_aaaa"} {
		x, err := r.Explain(ctx, "docs", commit)
		if err != nil {
			t.Fatal(err)
		}
		if x.Commit != "c_aaaa1" || x.Origin != 4 || x.Run != "run_91ab" || x.Lease != "lse_7Qk3" ||
			x.Principal != "agt_cleo" || x.OnBehalfOf != "usr_wei" || x.Purpose == "" {
			t.Fatalf("explanation %+v", x)
		}
		for _, c := range []struct{ name, got, want string }{
			{"events", seqs(x.Events), "4:commit 6:gate.requested 7:gate.decided 8:merge"},
			{"run events", seqs(x.RunEvents), "1:lease.issued 3:denied 4:commit 6:gate.requested 8:merge 9:lease.revoked"},
			{"gates", seqs(x.Gates), "6:gate.requested 7:gate.decided"},
			{"lease events", seqs(x.LeaseEvents), "1:lease.issued 9:lease.revoked"},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
			}
		}
		if x.RunEventsTotal != 6 || x.RunEventsTruncated || x.EventsTruncated {
			t.Errorf("totals %d %v %v", x.RunEventsTotal, x.RunEventsTruncated, x.EventsTruncated)
		}
		m := x.ReadManifest
		if m == nil || m.ID != "rm_run_91ab" || m.Entries != 2 || m.Bytes != 6000 || len(m.Reads) != 2 ||
			m.Reads[0].Length != 1000 || m.Truncated {
			t.Fatalf("manifest %+v", m)
		}
	}
	b, err := json.Marshal(must(r.Explain(ctx, "docs", "c_aaaa1")))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"commit":"c_aaaa1"`, `"run":"run_91ab"`, `"lease":"lse_7Qk3"`, `"run_events":[`,
		`"gates":[`, `"read_manifest":{"id":"rm_run_91ab"`, `"reads":[{"path":"/shared/launch/plan.md"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestExplainErrors(t *testing.T) {
	ctx := context.Background()
	r := explainScenario(t, Options{})
	for _, tc := range []struct {
		repo, commit string
		want         error
	}{
		{"docs", "c_nope", ErrNoSuchCommit},
		{"docs", "c_aaa", ErrAmbiguousCommit},
		{"docs", "", ErrInvalid},
		{"other", "c_aaaa1", ErrNoSuchCommit},
	} {
		t.Run(tc.repo+"/"+tc.commit, func(t *testing.T) {
			if _, err := r.Explain(ctx, tc.repo, tc.commit); !errors.Is(err, tc.want) {
				t.Fatalf("Explain = %v, want %v", err, tc.want)
			}
		})
	}
	if !errors.Is(ErrNoSuchCommit, ErrNotFound) || !errors.Is(ErrAmbiguousCommit, ErrAmbiguous) {
		t.Fatal("categories")
	}
	// In repo code the prefix is unique.
	x, err := r.Explain(ctx, "code", "c_aa")
	if err != nil || x.Commit != "c_aaaa1" || x.Run != "" || x.ReadManifest != nil {
		t.Fatalf("code: %+v, %v", x, err)
	}
	// Any repo.
	x, err = r.Explain(ctx, "", "c_aaaa1")
	if err != nil || len(x.Events) != 5 {
		t.Fatalf("any repo: %+v, %v", x, err)
	}
}

func TestExplainTruncates(t *testing.T) {
	r := explainScenario(t, Options{ExplainEvents: 2, ExplainReads: 1})
	x, err := r.Explain(context.Background(), "docs", "c_aaaa1")
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Events) != 2 || !x.EventsTruncated || len(x.RunEvents) != 2 || !x.RunEventsTruncated ||
		x.RunEventsTotal != 6 || len(x.ReadManifest.Reads) != 1 || !x.ReadManifest.Truncated {
		t.Fatalf("%+v", x)
	}
	if x.Origin != 4 {
		t.Fatalf("origin %d", x.Origin)
	}
}
