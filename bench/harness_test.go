package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/agentnas/nas/internal/pgtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
)

// TestHarnessTiny runs every registered workload end to end in the tiny
// profile: the real gateway, real gofakes3 on disk, a second gateway
// treated as a remote endpoint, real files, a spawned server process for
// the memory workload. It asserts that everything ran and reported, never
// how fast.
func TestHarnessTiny(t *testing.T) {
	ctx := context.Background()
	if os.Getenv(pgtest.RequireEnv) == "1" { // CI: the cluster workload runs too
		t.Setenv(PostgresEnv, pgtest.Start(t))
	}
	remote, err := StartGateway(ctx, "remote", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	p, err := ProfileFor("tiny")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, Options{
		Profile: p,
		Targets: []TargetSpec{{Name: "gofakes3", Kind: KindGoFakeS3},
			{Name: "remote", Kind: KindEndpoint, URL: remote.Endpoint, Creds: BenchCredentials()}},
		Dir:      t.TempDir(),
		Spawn:    testSpawner,
		Progress: func(f string, a ...any) { t.Logf(f, a...) },
		Command:  "go test ./bench",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Failures {
		t.Errorf("workload %s failed: %s", f.Workload, f.Error)
	}
	builtin := map[string]bool{}
	for _, r := range registry {
		builtin[r.w.Name] = r.builtin
	}
	byWorkload := map[string]int{}
	for _, r := range rep.Results {
		byWorkload[r.Workload]++
		if r.Curve != nil {
			for _, s := range r.Curve.Series {
				if len(s.Points) == 0 {
					t.Errorf("%s: series %q has no points", r.Workload, s.Name)
				}
			}
			continue
		}
		if len(r.Rows) == 0 && !skippedWhole(r) {
			t.Errorf("%s %s: no rows", r.Workload, r.Case)
		}
		for _, row := range r.Rows {
			if strings.HasPrefix(row.Skipped, "failed") {
				t.Errorf("%s %s: %s %s", r.Workload, r.Case, row.Subject, row.Skipped)
			}
			// In the built-in workloads only endpoints may be skipped: the
			// harness owns everything else. Others may need what this machine
			// lacks (/dev/fuse).
			if row.Skipped != "" && row.Subject != "remote" && builtin[r.Workload] {
				t.Errorf("%s %s: %s skipped: %s", r.Workload, r.Case, row.Subject, row.Skipped)
			}
		}
	}
	for _, w := range Registered() {
		if byWorkload[w.Name] == 0 {
			t.Errorf("workload %s reported nothing", w.Name)
		}
	}

	// The remote's buckets were removed again.
	var repos apiv1.RepoListResponse
	if err := remote.API.Do(ctx, apiv1.RepoListRequest{}, &repos); err != nil {
		t.Fatal(err)
	}
	for _, r := range repos.Repos {
		t.Errorf("repository %s left behind on the endpoint", r.Name)
	}

	dir := t.TempDir()
	files, err := rep.WritePlots(filepath.Join(dir, "plots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Errorf("wrote %d plots: %v", len(files), files)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md, "plots"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### put", "| nas |", "gofakes3", "files (baseline)", "![Fork time"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != len(rep.Results) {
		t.Errorf("JSON round trip: %d results, want %d", len(back.Results), len(rep.Results))
	}
	if testing.Verbose() {
		os.Stdout.Write(md.Bytes())
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want TargetSpec
		bad  bool
	}{
		{in: "nas", want: TargetSpec{Name: "nas", Kind: KindNAS}},
		{in: "gofakes3", want: TargetSpec{Name: "gofakes3", Kind: KindGoFakeS3}},
		{in: "minio=http://127.0.0.1:9100/", want: TargetSpec{Name: "minio", Kind: KindEndpoint, URL: "http://127.0.0.1:9100"}},
		{in: "minio", bad: true},
		{in: "=http://x", bad: true},
		{in: "MinIO=http://x", bad: true},
		{in: "m=ftp://x", bad: true},
	} {
		got, err := ParseTarget(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseTarget(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestLoadCountsEveryOperation(t *testing.T) {
	for _, l := range []Load{
		{Concurrency: 3, Ops: 50, Warmup: 2},
		{Concurrency: 2, Duration: 20 * time.Millisecond, MinOps: 5},
	} {
		seen := map[int]bool{}
		var mu = make(chan struct{}, 1)
		s, err := l.Run(context.Background(), func(_ context.Context, w, seq int) (int64, error) {
			mu <- struct{}{}
			if seen[seq] {
				t.Errorf("seq %d twice", seq)
			}
			seen[seq] = true
			<-mu
			return 10, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if l.Ops > 0 && s.Ops != l.Ops {
			t.Errorf("%+v: measured %d ops", l, s.Ops)
		}
		if s.Ops < l.MinOps || len(s.Latency) != s.Ops || s.Bytes != int64(10*s.Ops) {
			t.Errorf("%+v: sample %d ops, %d latencies, %d bytes", l, s.Ops, len(s.Latency), s.Bytes)
		}
		if len(seen) != s.Ops+l.Concurrency*l.Warmup {
			t.Errorf("%+v: %d operations run, want %d measured + %d warm-up", l, len(seen), s.Ops, l.Concurrency*l.Warmup)
		}
	}
}

func TestStat(t *testing.T) {
	s := StatOf([]float64{3, 1, 2, 10})
	if s.Median != 2.5 || s.Min != 1 || s.Max != 10 || s.N != 4 {
		t.Errorf("StatOf = %+v", s)
	}
	if StatOf([]float64{5}).Spread() != 0 {
		t.Error("one run has a spread")
	}
	if r := ratio(Metric{Value: 200}, Metric{Value: 100}); r != 2 {
		t.Errorf("throughput ratio %v", r)
	}
	if r := ratio(Metric{Value: 1, Better: Lower}, Metric{Value: 3, Better: Lower}); r != 3 {
		t.Errorf("time ratio %v", r)
	}
	if b := slope([]Point{{1, 5, 0}, {10, 5, 0}, {100, 5, 0}}); b != 0 {
		t.Errorf("flat slope %v", b)
	}
	if b := slope([]Point{{1, 2, 0}, {10, 20, 0}, {100, 200, 0}}); b < 0.99 || b > 1.01 {
		t.Errorf("linear slope %v", b)
	}
}

// TestContentDoesNotDeduplicate checks what the PUT workloads rely on:
// bodies with different stamps share no chunk in the gateway's chunk
// store, and equal stamps give equal bytes.
func TestContentDoesNotDeduplicate(t *testing.T) {
	c := DefaultContent()
	if !bytes.Equal(c.Bytes(3, 1<<20), c.Bytes(3, 1<<20)) {
		t.Fatal("equal stamps give different bodies")
	}
	dir := t.TempDir()
	db, err := kv.OpenBadger(filepath.Join(dir, "kv"), kv.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := cas.Open(filepath.Join(dir, "chunks"), db, cas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	seen := map[chunk.Hash]bool{}
	for i := uint64(0); i < 2; i++ {
		u := st.NewUpload()
		refs, _, err := u.Ingest(ctx, c.Reader(i, 24<<20))
		u.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			if seen[r.Hash] {
				t.Fatalf("body %d shares chunk %s", i, r.Hash)
			}
			seen[r.Hash] = true
		}
	}
	// Sections join up to the whole body.
	var b bytes.Buffer
	b.ReadFrom(c.Section(9, 0, 100_000))
	b.ReadFrom(c.Section(9, 100_000, 200_000))
	if !bytes.Equal(b.Bytes(), c.Bytes(9, 300_000)) {
		t.Error("sections differ from the body")
	}
}

func TestListPage(t *testing.T) {
	b := []byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>true</IsTruncated>` +
		`<Contents><Key>a</Key></Contents><Contents><Key>b&amp;c</Key></Contents><CommonPrefixes><Prefix>d/</Prefix></CommonPrefixes>` +
		`<NextContinuationToken>x&amp;y=</NextContinuationToken></ListBucketResult>`)
	keys, prefixes, next, truncated := listPage(b)
	if keys != 2 || prefixes != 1 || next != "x&y=" || !truncated {
		t.Errorf("listPage = %d, %d, %q, %v", keys, prefixes, next, truncated)
	}
}

// skippedWhole reports whether a result says it was skipped as a whole
// (the cluster workload without a PostgreSQL outside CI).
func skippedWhole(r *Result) bool {
	return len(r.Notes) > 0 && strings.HasPrefix(r.Notes[0], "skipped:") && os.Getenv(pgtest.RequireEnv) != "1"
}
