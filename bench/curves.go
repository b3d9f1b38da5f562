package bench

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// The scaling curves: how fork, commit, diff and list costs grow, one point
// per size, on the in-process gateway (and gofakes3 and plain directories
// for listing). Branches are loaded through the branch service's bulk
// import (a committed tree, as a data set imported or committed once would
// be); the S3 "list" workload covers listing a bucket filled by PUTs.

// curveKey is key i of a synthetic branch, in sorted order.
func curveKey(i int) string { return fmt.Sprintf("data/part-%09d.parquet", i) }

// synthetic yields n object entries in key order (metadata only: the
// curves measure trees, not bytes).
func synthetic(n int) iter.Seq2[branch.ImportEntry, error] {
	return func(yield func(branch.ImportEntry, error) bool) {
		for i := 0; i < n; i++ {
			e := &manifest.Entry{Size: int64(i), ETag: fmt.Sprintf("%032x", i), ContentType: "application/octet-stream"}
			if !yield(branch.ImportEntry{Key: curveKey(i), Entry: e}, nil) {
				return
			}
		}
	}
}

// loadRepo creates repo with n committed objects on main.
func loadRepo(ctx context.Context, b *branch.Service, repo string, n int) error {
	if _, err := b.CreateRepo(ctx, repo, branch.CreateRepoOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", repo, err)
	}
	if _, err := b.Import(ctx, repo, "main", synthetic(n), branch.CommitOptions{Message: "import"}); err != nil {
		return fmt.Errorf("import %d objects into %s: %w", n, repo, err)
	}
	return nil
}

// stage writes changes new entries on branch br over existing keys of a
// tree of size n (spread evenly over it; new keys when changes > n),
// sixteen at a time, as PUTs would stage them.
func stage(ctx context.Context, b *branch.Service, repo, br string, n, changes, round int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	step := max(1, n/max(changes, 1))
	for k := 0; k < changes; k++ {
		key := curveKey((k*step + round) % max(n, 1))
		if changes > n {
			key = fmt.Sprintf("new/r%d/k%09d", round, k)
		}
		g.Go(func() error {
			_, err := b.Put(gctx, repo, br, key, &manifest.Entry{Size: int64(round), ETag: fmt.Sprintf("%032x", round+1)}, branch.Condition{})
			return err
		})
	}
	return g.Wait()
}

// medianMS is the median of ds in milliseconds.
func medianMS(ds []time.Duration) float64 {
	vals := make([]float64, len(ds))
	for i, d := range ds {
		vals[i] = ms(d)
	}
	return StatOf(vals).Median
}

// spreadOf is the spread of ds in milliseconds.
func spreadOf(ds []time.Duration) float64 {
	vals := make([]float64, len(ds))
	for i, d := range ds {
		vals[i] = ms(d)
	}
	return StatOf(vals).Spread()
}

// point is the curve point of x: the median of ds and its spread.
func point(x int, ds []time.Duration) Point {
	return Point{X: float64(x), Y: medianMS(ds), Spread: spreadOf(ds)}
}

// curveReps is how many times each curve point is measured.
func (p Profile) curveReps() int { return max(p.Reps, 3) }

// runForkCurve times a fork against the number of objects in the branch.
func runForkCurve(ctx context.Context, e *Env) ([]*Result, error) {
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	b := t.Gateway.Branches
	svc := Series{Name: "branch service, in process"}
	api := Series{Name: "control API over HTTP (branch/create)"}
	reps := e.Profile.curveReps()
	for _, n := range e.Profile.ScaleSizes {
		repo := fmt.Sprintf("fork-%d", n)
		e.Logf("  fork: loading %d objects", n)
		if err := loadRepo(ctx, b, repo, n); err != nil {
			return nil, err
		}
		var ds, dh []time.Duration
		for i := 0; i < reps+1; i++ {
			start := time.Now()
			if _, err := b.CreateBranch(ctx, repo, fmt.Sprintf("svc-%d", i), "main"); err != nil {
				return nil, err
			}
			d := time.Since(start)
			start = time.Now()
			if err := t.API.Do(ctx, apiv1.BranchCreateRequest{Repo: repo, Name: fmt.Sprintf("api-%d", i), From: "main"}, nil); err != nil {
				return nil, err
			}
			if i > 0 { // the first of each is a warm-up
				ds, dh = append(ds, d), append(dh, time.Since(start))
			}
		}
		svc.Points = append(svc.Points, point(n, ds))
		api.Points = append(api.Points, point(n, dh))
	}
	c := &Curve{Name: "fork", Title: "Fork time vs objects in the branch", XLabel: "objects", YLabel: "ms per fork", Series: []Series{svc, api}}
	return []*Result{{Case: "time per fork", Curve: c, Notes: []string{
		"A fork writes one branch record whatever the branch holds; the control API adds the HTTP round trip, the signature check and the flight-recorder event written before the fork."}}}, nil
}

// commitDiffPoints measures, on repo (a tree of n objects), a commit of
// changes staged changes and the diff of the two commits, reps times.
func commitDiffPoints(ctx context.Context, b *branch.Service, repo string, n, changes, reps int) (commits, diffs []time.Duration, err error) {
	for r := 0; r < reps; r++ {
		from, err := b.ResolveRef(ctx, repo, "main")
		if err != nil {
			return nil, nil, err
		}
		if err := stage(ctx, b, repo, "main", n, changes, r+1); err != nil {
			return nil, nil, fmt.Errorf("stage %d changes: %w", changes, err)
		}
		start := time.Now()
		to, err := b.Commit(ctx, repo, "main", branch.CommitOptions{Message: "bench"})
		if err != nil {
			return nil, nil, fmt.Errorf("commit: %w", err)
		}
		commits = append(commits, time.Since(start))
		start = time.Now()
		seen := 0
		if err := b.Diff(ctx, repo, from.String(), to.String(), "", nil, func(branch.Change) error { seen++; return nil }); err != nil {
			return nil, nil, fmt.Errorf("diff: %w", err)
		}
		diffs = append(diffs, time.Since(start))
		if seen != changes {
			return nil, nil, fmt.Errorf("diff of %d changes found %d", changes, seen)
		}
	}
	return commits, diffs, nil
}

// commitDiffCurves measures the commit and diff curves together, once per
// run for both workloads.
func commitDiffCurves(ctx context.Context, e *Env) (byChanges, byTree [2]Series, err error) {
	v, err := e.Memo("commit-diff", func() (any, error) {
		c, t, err := measureCommitDiff(ctx, e)
		return [2][2]Series{c, t}, err
	})
	if err != nil {
		return byChanges, byTree, err
	}
	r := v.([2][2]Series)
	return r[0], r[1], nil
}

// measureCommitDiff times commits and diffs against the number of
// changes and against the tree size, for the commit and diff curves.
func measureCommitDiff(ctx context.Context, e *Env) (byChanges, byTree [2]Series, err error) {
	t, err := e.StartReference(ctx)
	if err != nil {
		return byChanges, byTree, err
	}
	defer Targets{t}.Close()
	b := t.Gateway.Branches
	p := e.Profile
	reps := p.curveReps()
	n := p.TreeSize
	if err := loadRepo(ctx, b, "changes", n); err != nil {
		return byChanges, byTree, err
	}
	byChanges[0].Name = fmt.Sprintf("commit, tree of %s objects", groupThousands(int64(n)))
	byChanges[1].Name = fmt.Sprintf("diff, tree of %s objects", groupThousands(int64(n)))
	for _, c := range p.Changes {
		e.Logf("  commit/diff: %d changes on %d objects", c, n)
		cs, ds, err := commitDiffPoints(ctx, b, "changes", n, c, reps)
		if err != nil {
			return byChanges, byTree, err
		}
		byChanges[0].Points = append(byChanges[0].Points, point(c, cs))
		byChanges[1].Points = append(byChanges[1].Points, point(c, ds))
	}
	byTree[0].Name, byTree[1].Name = "commit of 100 changes", "diff of 100 changes"
	for _, size := range p.ScaleSizes {
		if size < 1000 {
			continue
		}
		repo := fmt.Sprintf("tree-%d", size)
		e.Logf("  commit/diff: 100 changes on %d objects", size)
		if err := loadRepo(ctx, b, repo, size); err != nil {
			return byChanges, byTree, err
		}
		cs, ds, err := commitDiffPoints(ctx, b, repo, size, 100, reps)
		if err != nil {
			return byChanges, byTree, err
		}
		byTree[0].Points = append(byTree[0].Points, point(size, cs))
		byTree[1].Points = append(byTree[1].Points, point(size, ds))
	}
	return byChanges, byTree, nil
}

// runCommitCurve reports the commit curves of measureCommitDiff.
func runCommitCurve(ctx context.Context, e *Env) ([]*Result, error) {
	byChanges, byTree, err := commitDiffCurves(ctx, e)
	if err != nil {
		return nil, err
	}
	return []*Result{
		{Case: "against staged changes", Curve: &Curve{Name: "commit", Title: "Commit time vs staged changes",
			XLabel: "staged changes", YLabel: "ms per commit", Series: []Series{byChanges[0]}}},
		{Case: "against tree size", Curve: &Curve{Name: "commit-tree", Title: "Commit time vs tree size (100 changes)",
			XLabel: "objects in the branch", YLabel: "ms per commit", Series: []Series{byTree[0]}}},
	}, nil
}

// runDiffCurve reports the diff curves of measureCommitDiff.
func runDiffCurve(ctx context.Context, e *Env) ([]*Result, error) {
	byChanges, byTree, err := commitDiffCurves(ctx, e)
	if err != nil {
		return nil, err
	}
	return []*Result{
		{Case: "against changes", Curve: &Curve{Name: "diff", Title: "Diff time vs changes between two commits",
			XLabel: "changes", YLabel: "ms per diff", Series: []Series{byChanges[1]}}},
		{Case: "against tree size", Curve: &Curve{Name: "diff-tree", Title: "Diff time vs tree size (100 changes)",
			XLabel: "objects in the branch", YLabel: "ms per diff", Series: []Series{byTree[1]}}},
	}, nil
}

// curveLister is one series of the list curve and how it lists every key.
type curveLister struct {
	s    *Series
	list func() (ListPage, error)
}

// measure lists every key reps+1 times, the first untimed, and adds the
// point of n keys to the series; a listing that misses keys fails.
func (l curveLister) measure(n, reps int) error {
	var ds []time.Duration
	for r := 0; r < reps+1; r++ {
		start := time.Now()
		lp, err := l.list()
		if err != nil {
			return fmt.Errorf("%s: %w", l.s.Name, err)
		}
		if lp.Keys != n {
			return fmt.Errorf("%s listed %d of %d keys", l.s.Name, lp.Keys, n)
		}
		if r > 0 {
			ds = append(ds, time.Since(start))
		}
	}
	l.s.Points = append(l.s.Points, point(n, ds))
	return nil
}

// runListCurve times listing every key against the number of keys: the
// gateway's committed tree, gofakes3 (up to its limit) and one directory
// of files.
func runListCurve(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	reps := p.curveReps()
	nas, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{nas}.Close()
	series := []Series{{Name: "nas (committed tree)"}}
	// gofakes3, when it is a target, and plain directories grow one key
	// set as the sizes rise.
	var fake *Target
	for _, s := range e.Specs {
		if s.Kind == KindGoFakeS3 {
			if fake, err = e.StartTarget(ctx, s); err != nil {
				return nil, err
			}
			defer Targets{fake}.Close()
			if err := fake.Backend.CreateBucket("list"); err != nil {
				return nil, err
			}
			series = append(series, Series{Name: fake.Name})
		}
	}
	dir, err := e.TempDir("list-files")
	if err != nil {
		return nil, err
	}
	files := &DirStore{Root: dir, NoSync: true}
	if err := files.CreateBucket(ctx, "list"); err != nil {
		return nil, err
	}
	series = append(series, Series{Name: "files (walk of one directory)"})
	loaded := 0
	for _, n := range p.ScaleSizes {
		e.Logf("  list-scaling: %d keys", n)
		repo := fmt.Sprintf("list-%d", n)
		if err := loadRepo(ctx, nas.Gateway.Branches, repo, n); err != nil {
			return nil, err
		}
		listers := []curveLister{{&series[0], func() (ListPage, error) { return nas.Client.List(ctx, repo, "", "", 1000) }}}
		if fake != nil && n <= p.GoFakeS3ListMax {
			for i := loaded; i < n; i++ {
				if _, err := fake.Backend.PutObject("list", curveKey(i), map[string]string{}, strings.NewReader(""), 0, nil); err != nil {
					return nil, fmt.Errorf("load gofakes3: %w", err)
				}
			}
			listers = append(listers, curveLister{&series[1], func() (ListPage, error) { return fake.Client.List(ctx, "list", "", "", 1000) }})
		}
		for i := loaded; i < n; i++ {
			if err := files.Put(ctx, "list", curveKey(i), strings.NewReader(""), 0); err != nil {
				return nil, err
			}
		}
		loaded = n
		listers = append(listers, curveLister{&series[len(series)-1], func() (ListPage, error) { return files.List(ctx, "list", "", "", 0) }})
		for _, l := range listers {
			if err := l.measure(n, reps); err != nil {
				return nil, err
			}
		}
	}
	notes := []string{"Every key, all pages of 1,000 (ListObjectsV2 over HTTP for the S3 stores)."}
	if fake != nil {
		notes = append(notes, fmt.Sprintf("gofakes3 up to %s keys (loaded through its backend, not HTTP); it answers all keys in one page.", groupThousands(int64(p.GoFakeS3ListMax))))
	}
	return []*Result{{Case: "time to list every key", Curve: &Curve{Name: "list", Title: "List time vs keys",
		XLabel: "keys", YLabel: "ms per full listing", Series: series}, Notes: notes}}, nil
}
