package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// The run workflow's costs: a run's branch with c changes is committed,
// diffed against main and merged back into main (which moved meanwhile,
// so the merge is a real three-way one), all through the control API over
// HTTP as `nas commit`, `nas diff` and `nas merge` call it. With --lakefs
// the same rounds at 1,000 changes run against a lakeFS server on the same
// tree (lakefs.go); without, lakeFS's figures from the issue (on a tree of
// 10,000 objects) are shown, marked as such.

func init() {
	Register(Workload{Name: "merge", Doc: "commit, diff and three-way merge of a run's branch with 1,000 to 100,000 changes, through the control API, against lakeFS (--lakefs) or its figures", Run: runMerge})
}

// lakeFS's figures for 1,000 changes (ms), from the issue that asked for
// this workload ("lakeFS on this machine").
const (
	lakeFSDiff1k   = 107
	lakeFSMerge1k  = 26
	lakeFSCommit1k = 38
)

// mainMoves is how many keys main gains between a run's fork and its
// merge, so that both sides of every merge changed.
const mainMoves = 100

// mergeChanges are the change counts of the merge curve per mode.
func (p Profile) mergeChanges() []int {
	switch p.Mode {
	case "tiny":
		return []int{10, 100}
	case "quick":
		return []int{100, 1000, 10000}
	}
	return []int{1000, 10000, 100000}
}

// mergeSample is one round's timings.
type mergeSample struct{ commit, diff, merge time.Duration }

// mergeRound forks run from main, stages and commits changes on it, moves
// main by mainMoves new keys, then diffs main's old head against the run
// and merges the run into main, timing commit, diff and merge.
func mergeRound(ctx context.Context, t *Target, repo string, n, changes, round int) (mergeSample, error) {
	var s mergeSample
	b := t.Gateway.Branches
	run := fmt.Sprintf("run-%d-%d", changes, round)
	base, err := b.ResolveRef(ctx, repo, "main")
	if err != nil {
		return s, err
	}
	if _, err := b.CreateBranch(ctx, repo, run, "main"); err != nil {
		return s, fmt.Errorf("fork %s: %w", run, err)
	}
	if err := stage(ctx, b, repo, run, n, changes, round); err != nil {
		return s, fmt.Errorf("stage %d changes: %w", changes, err)
	}
	start := time.Now()
	var commit apiv1.CommitResponse
	if err := t.API.Do(ctx, apiv1.CommitCreateRequest{Repo: repo, Branch: run, Message: "run"}, &commit); err != nil {
		return s, err
	}
	s.commit = time.Since(start)

	// main moves: new keys the run does not touch, written while main is
	// briefly unprotected (a protected branch refuses direct writes).
	if err := b.SetProtected(ctx, repo, "main", false); err != nil {
		return s, err
	}
	for k := 0; k < mainMoves; k++ {
		key := fmt.Sprintf("main/r%d-%d/k%04d", changes, round, k)
		if _, err := b.Put(ctx, repo, "main", key, &manifest.Entry{Size: 1, ETag: fmt.Sprintf("%032x", k)}, branch.Condition{}); err != nil {
			return s, err
		}
	}
	if _, err := b.Commit(ctx, repo, "main", branch.CommitOptions{Message: "main moves"}); err != nil {
		return s, err
	}
	if err := b.SetProtected(ctx, repo, "main", true); err != nil {
		return s, err
	}

	start = time.Now()
	seen, cursor := 0, ""
	for {
		var page apiv1.ChangesResponse
		req := apiv1.DiffListRequest{Repo: repo, From: base.String(), To: commit.Commit.ID, Page: apiv1.Page{Cursor: cursor, Limit: 10000}}
		if err := t.API.Do(ctx, req, &page); err != nil {
			return s, err
		}
		seen += len(page.Changes)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	s.diff = time.Since(start)
	if seen != changes {
		return s, fmt.Errorf("diff of %d changes listed %d", changes, seen)
	}

	start = time.Now()
	var merged apiv1.MergeCreateResponse
	if err := t.API.Do(ctx, apiv1.MergeCreateRequest{Repo: repo, From: run, Into: "main"}, &merged); err != nil {
		return s, err
	}
	s.merge = time.Since(start)
	if merged.Result.Applied != changes || merged.Result.Commit == "" {
		return s, fmt.Errorf("merge of %d changes applied %d (commit %q)", changes, merged.Result.Applied, merged.Result.Commit)
	}
	return s, nil
}

func runMerge(ctx context.Context, e *Env) ([]*Result, error) {
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	p := e.Profile
	n := p.TreeSize
	reps := p.curveReps()
	const repo = "workflow"
	if err := loadRepo(ctx, t.Gateway.Branches, repo, n); err != nil {
		return nil, err
	}
	series := []Series{{Name: "commit of the run's branch"}, {Name: "diff (every page)"}, {Name: "three-way merge into main"}}
	var at1k *[3][]time.Duration
	for _, c := range p.mergeChanges() {
		e.Logf("  merge: %d changes on %d objects", c, n)
		var ds [3][]time.Duration
		for r := 0; r < reps; r++ {
			s, err := mergeRound(ctx, t, repo, n, c, r)
			if err != nil {
				return nil, err
			}
			ds[0], ds[1], ds[2] = append(ds[0], s.commit), append(ds[1], s.diff), append(ds[2], s.merge)
		}
		for i := range series {
			series[i].Points = append(series[i].Points, point(c, ds[i]))
		}
		if c == 1000 {
			at1k = &ds
		}
	}
	tree := groupThousands(int64(n))
	out := []*Result{{Case: "time against changes", Curve: &Curve{Name: "merge",
		Title:  fmt.Sprintf("Commit, diff and merge vs changes (control API, tree of %s objects)", tree),
		XLabel: "changes", YLabel: "ms", Series: series},
		Notes: []string{fmt.Sprintf("Each point: fork main, stage the changes (not timed), commit the run's branch, add %d keys to main (not timed), list the diff of main's old head against the run's commit (pages of 10,000), merge the run into the protected main (a merge commit with two parents). Over HTTP with SigV4, as `nas commit`, `nas diff` and `nas merge` call them.", mainMoves)}}}
	if at1k == nil {
		return out, nil
	}
	var lake *[3][]time.Duration
	if e.LakeFS != nil {
		ds, err := lakeFSRounds(ctx, e, n, 1000, reps)
		if err != nil {
			return nil, err
		}
		lake = &ds
	}
	for i, w := range []struct {
		what string
		ref  float64
	}{{"commit of 1,000 changes", lakeFSCommit1k}, {"diff of 1,000 changes", lakeFSDiff1k}, {"merge of 1,000 changes", lakeFSMerge1k}} {
		ref := Row{Subject: "lakeFS (figure from the issue, not rerun here)", Baseline: true,
			Metrics: []Metric{{Name: "time", Unit: "ms", Value: w.ref, Better: Lower}}, Note: "a tree of 10,000 objects"}
		if lake != nil {
			ref = Row{Subject: "lakeFS", Baseline: true, Metrics: []Metric{{Name: "time", Unit: "ms", Value: medianMS(lake[i]), Spread: spreadOf(lake[i]), Better: Lower}},
				Note: fmt.Sprintf("tree of %s objects, in this run (REST API, objects through its S3 gateway)", tree)}
		}
		out = append(out, &Result{Case: w.what + ", against lakeFS", Rows: []Row{
			{Subject: e.Reference, Metrics: []Metric{{Name: "time", Unit: "ms", Value: medianMS(at1k[i]), Spread: spreadOf(at1k[i]), Better: Lower}},
				Note: fmt.Sprintf("tree of %s objects", tree)}, ref,
		}})
	}
	return out, nil
}
