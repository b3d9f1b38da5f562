package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/apiv1"
)

// The search workload: N small text files of words drawn from a Zipf
// vocabulary, PUT into a repository of the in-process gateway and
// committed, and written to a plain directory beside it. It measures the
// index build (index/rebuild: files per second) against one grep -r -l
// pass over the directory, and search/query latency against grep -r -l
// for the same single words, rare to common, in the same run.

// init registers the search workload.
func init() {
	Register(Workload{Name: "search", Doc: "full-text search: index build rate and search/query latency over N small files, against grep -r -l on the same files", Run: runSearch})
}

// Sizes and subjects of the search workload.
const (
	searchVocab = 20000 // words w00000..w19999, Zipf-distributed
	searchLines = 6     // lines per file
	searchWords = 10    // words per line
	searchRepo  = "search"
	subjSearch  = "nas search/query (control API, limit 10)"
	subjGrep    = "grep -r -l WORD (plain directory)"
	subjBuild   = "nas index/rebuild (control API)"
	subjGrepAll = "grep -r -l, one pass over every file"
)

// searchFiles is N of the search workload in a mode.
func searchFiles(mode string) int {
	switch mode {
	case "tiny":
		return 1000
	case "quick":
		return 10000
	}
	return 100000
}

// searchQueries are the words searched: ranks from rare to common.
var searchQueries = []int{19000, 5000, 1000, 200, 50, 10, 2, 0}

// searchWord is word i of the vocabulary; fixed width, so no word is a
// substring of another and grep matches what the index does.
func searchWord(i int) string { return fmt.Sprintf("w%05d", i) }

// searchFile is the text of file i: searchLines lines of searchWords
// words, the same for every run.
func searchFile(i int) []byte {
	r := rand.New(rand.NewPCG(uint64(i), 0x5ea7c4))
	z := rand.NewZipf(r, 1.1, 4, searchVocab-1)
	var b bytes.Buffer
	for range searchLines {
		for w := range searchWords {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(searchWord(int(z.Uint64())))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func searchKey(i int) string { return fmt.Sprintf("notes/%03d/note-%07d.txt", i%1000, i) }

// runSearch runs the search workload.
func runSearch(ctx context.Context, e *Env) ([]*Result, error) {
	n := searchFiles(e.Profile.Mode)
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	dir, err := e.TempDir("search-files")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	e.Logf("  search: writing %d files to the gateway and to %s", n, dir)
	if err := searchLoad(ctx, t, dir, n); err != nil {
		return nil, err
	}
	build, err := searchBuild(ctx, e, t, dir, n)
	if err != nil {
		return nil, fmt.Errorf("build: %w", err)
	}
	query, err := searchLatency(ctx, e, t, dir, n)
	if err != nil {
		return []*Result{build}, fmt.Errorf("query: %w", err)
	}
	return []*Result{build, query}, nil
}

// searchLoad PUTs n files into the repository, sixteen at a time, commits
// them and writes the same files under dir.
func searchLoad(ctx context.Context, t *Target, dir string, n int) error {
	if err := t.Client.CreateBucket(ctx, searchRepo); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			body, key := searchFile(i), searchKey(i)
			p := filepath.Join(dir, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(p, body, 0o600); err != nil {
				return err
			}
			return t.Client.Put(gctx, searchRepo, key, bytes.NewReader(body), int64(len(body)))
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return t.API.Do(ctx, apiv1.CommitCreateRequest{Repo: searchRepo, Branch: "main", Message: "search corpus"}, nil)
}

// grepL runs grep -r -l word over dir and returns how many files it
// listed (grep exits 1 when none matched).
func grepL(ctx context.Context, dir, word string) (int, error) {
	out, err := exec.CommandContext(ctx, "grep", "-r", "-l", word, dir).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return 0, nil
	}
	return bytes.Count(out, []byte("\n")), err
}

// searchBuild times index/rebuild of the n files against one grep pass
// over them, reps times each, interleaved.
func searchBuild(ctx context.Context, e *Env, t *Target, dir string, n int) (*Result, error) {
	reps := max(e.Profile.Reps, 1)
	if n >= 100000 {
		reps = 1 // one build of the full corpus is the measurement
	}
	var files int
	subjects := []Subject{
		{Name: subjBuild, Measure: func(ctx context.Context, _ int) (Sample, error) {
			start := time.Now()
			var out apiv1.IndexResponse
			if err := t.API.Do(ctx, apiv1.IndexRebuildRequest{Repo: searchRepo}, &out); err != nil {
				return Sample{}, err
			}
			d := time.Since(start)
			if len(out.Indexes) != 1 {
				return Sample{}, fmt.Errorf("rebuild answered %d indexes", len(out.Indexes))
			}
			files = out.Indexes[0].Files
			return Sample{Ops: files, Elapsed: d, Latency: []time.Duration{d}}, nil
		}},
		{Name: subjGrepAll, Baseline: true, Note: "reads every file once, as the build does; it builds nothing", Measure: func(ctx context.Context, _ int) (Sample, error) {
			start := time.Now()
			if _, err := grepL(ctx, dir, "zzz-no-such-word"); err != nil {
				return Sample{}, err
			}
			d := time.Since(start)
			return Sample{Ops: n, Elapsed: d, Latency: []time.Duration{d}}, nil
		}},
	}
	rows, err := Compare(ctx, reps, subjects, ByRate)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if len(rows[i].Metrics) > 0 {
			rows[i].Metrics = rows[i].Metrics[:1] // files/s; p50/p99 of one call per run say nothing more
			rows[i].Metrics[0].Name, rows[i].Metrics[0].Unit = "build rate", "files/s"
		}
	}
	if files != n {
		return nil, fmt.Errorf("the index holds %d text files of %d", files, n)
	}
	return &Result{Case: fmt.Sprintf("index build, %s files of %d lines", groupThousands(int64(n)), searchLines), Reference: subjBuild, Rows: rows, Notes: []string{
		"The build is the owner's index/rebuild: delete, then walk the commit's tree, read every file from the chunk store and index it with bleve (scorch, BM25, positions), in batches of 512.",
		"grep -r -l of a word no file holds reads every file once from the page cache and keeps nothing."}}, nil
}

// searchLatency times search/query of each word against grep -r -l of
// it, interleaved, and checks they find the same files when the answer
// fits the limit.
func searchLatency(ctx context.Context, e *Env, t *Target, dir string, n int) (*Result, error) {
	reps := max(e.Profile.Reps, 2)
	limit := 10
	var mismatch error
	subjects := []Subject{
		{Name: subjSearch, Measure: func(ctx context.Context, _ int) (Sample, error) {
			return searchSample(ctx, searchQueries, func(ctx context.Context, w string) (int, error) {
				var out apiv1.SearchQueryResponse
				err := t.API.Do(ctx, apiv1.SearchQueryRequest{Repo: searchRepo, Query: w, Limit: limit}, &out)
				return len(out.Hits), err
			})
		}},
		{Name: subjGrep, Baseline: true, Note: "lists every matching file; search/query answers the best 10 with snippets", Measure: func(ctx context.Context, _ int) (Sample, error) {
			return searchSample(ctx, searchQueries, func(ctx context.Context, w string) (int, error) {
				return grepL(ctx, dir, w)
			})
		}},
	}
	rows, err := Compare(ctx, reps, subjects, ByRate)
	if err != nil {
		return nil, err
	}
	for _, q := range searchQueries[:1] { // the rarest word: both must agree
		hits, herr := searchCount(ctx, t, searchWord(q), apiv1.MaxSearchLimit)
		files, gerr := grepL(ctx, dir, searchWord(q))
		if err := errors.Join(herr, gerr); err != nil {
			return nil, err
		}
		if files <= apiv1.MaxSearchLimit && hits != files {
			mismatch = fmt.Errorf("%s: search found %d files, grep %d", searchWord(q), hits, files)
		}
	}
	return &Result{Case: fmt.Sprintf("search latency, %s files", groupThousands(int64(n))), Reference: subjSearch, Rows: rows, Notes: []string{
		fmt.Sprintf("One operation is one word (ranks %v of a Zipf vocabulary of %d words): search/query with limit %d over HTTP as the owner (index already built), or grep -r -l WORD over the same files in a plain directory.", searchQueries, searchVocab, limit),
		"p50 and p99 are over every word of every run."}}, mismatch
}

// searchSample runs one operation per word and times each.
func searchSample(ctx context.Context, words []int, op func(context.Context, string) (int, error)) (Sample, error) {
	s := Sample{}
	start := time.Now()
	for _, w := range words {
		t0 := time.Now()
		if _, err := op(ctx, searchWord(w)); err != nil {
			return s, err
		}
		s.Latency = append(s.Latency, time.Since(t0))
		s.Ops++
	}
	s.Elapsed = time.Since(start)
	return s, nil
}

// searchCount is how many hits search/query answers for word.
func searchCount(ctx context.Context, t *Target, word string, limit int) (int, error) {
	var out apiv1.SearchQueryResponse
	err := t.API.Do(ctx, apiv1.SearchQueryRequest{Repo: searchRepo, Query: word, Limit: limit}, &out)
	return len(out.Hits), err
}
