package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/agentnas/nas/source"
)

// The git-attach workload: a Git repository of many small files, made
// with `git fast-import` in the run's directory, attached to a repository
// of the in-process gateway (git:PATH@main), beside `git clone
// --no-checkout` of the same repository in the same run. Both read the
// repository's objects from the page cache; attach lists the tree and
// imports one lazy entry per file (no blob is read), the clone copies
// the pack and writes the refs (no work tree).

// init registers the git-attach workload.
func init() {
	Register(Workload{Name: "git-attach", Doc: "attach of a Git revision of many files against git clone --no-checkout of the same repository", Run: runGitAttach})
}

// gitFilesFor is how many files the repository holds in mode.
func gitFilesFor(mode string) int {
	switch mode {
	case "tiny":
		return 1000
	case "quick":
		return 10000
	}
	return 100000
}

// Subjects of the git-attach workload.
const (
	gitAttach = "nas, attach git:PATH@main"
	gitClone  = "git clone --no-checkout"
)

// runGitAttach runs the git-attach workload.
func runGitAttach(ctx context.Context, e *Env) ([]*Result, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("git-attach needs git on PATH: %w", err)
	}
	n := gitFilesFor(e.Profile.Mode)
	dir, err := os.MkdirTemp(e.Dir, "git-attach-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "src.git")
	e.Logf("  git-attach: a repository of %d files", n)
	if err := makeGitRepo(ctx, repo, n); err != nil {
		return nil, err
	}
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	rows, err := Compare(ctx, e.Profile.Reps, []Subject{
		{Name: gitAttach, Note: "owner's attach until ready: resolve main, walk the tree, one lazy entry per file (pinned to its blob), a commit per 10,000",
			Measure: func(ctx context.Context, rep int) (Sample, error) { return gitAttachOnce(ctx, t, repo, rep, n) }},
		{Name: gitClone, Baseline: true, Note: "of the same repository into a new folder (file://, so git packs and transfers the objects as for a remote)",
			Measure: func(ctx context.Context, rep int) (Sample, error) { return gitCloneOnce(ctx, repo, dir, rep) }},
	}, ByTime)
	if err != nil {
		return nil, err
	}
	notes := []string{fmt.Sprintf("A repository of %s files of 20-40 bytes in 100 folders, one commit, made with git fast-import. "+
		"Each attach goes into a new repository of one gateway; each clone into a new folder.", groupThousands(int64(n)))}
	return []*Result{{Case: fmt.Sprintf("attach of %s Git files", groupThousands(int64(n))), Reference: gitAttach, Rows: rows, Notes: notes}}, nil
}

// makeGitRepo makes a bare repository at dir whose main holds n files.
func makeGitRepo(ctx context.Context, dir string, n int) error {
	if out, err := exec.CommandContext(ctx, "git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "fast-import", "--quiet")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriter(in)
	fmt.Fprintf(w, "commit refs/heads/main\ncommitter bench <bench@example.org> 1764547200 +0000\ndata 5\nfiles\n")
	for i := range n {
		body := fmt.Sprintf("file %d of the bench tree\n", i)
		fmt.Fprintf(w, "M 100644 inline d%02d/f%06d.txt\ndata %d\n%s\n", i%100, i, len(body), body)
	}
	werr := w.Flush()
	in.Close()
	if err := errors.Join(werr, cmd.Wait()); err != nil {
		return fmt.Errorf("git fast-import: %w", err)
	}
	return nil
}

// gitAttachOnce attaches the repository into a new repository of t.
func gitAttachOnce(ctx context.Context, t *Target, repo string, rep, n int) (Sample, error) {
	name := fmt.Sprintf("git-%d", rep)
	if err := t.Client.CreateBucket(ctx, name); err != nil {
		return Sample{}, err
	}
	start := time.Now()
	info, err := t.Gateway.Sources.Add(ctx, source.Spec{Repo: name, Prefix: "src/", URL: "git:" + repo + "@main"})
	if err != nil {
		return Sample{}, fmt.Errorf("attach: %w", err)
	}
	if info, err = waitReady(ctx, t.Gateway.Sources, info.ID); err != nil {
		return Sample{}, err
	}
	d := time.Since(start)
	if info.Added != int64(n) {
		return Sample{}, fmt.Errorf("attached %d files of %d", info.Added, n)
	}
	return Sample{Ops: 1, Elapsed: d, Latency: []time.Duration{d}}, nil
}

// gitCloneOnce clones the repository into a new folder of dir.
func gitCloneOnce(ctx context.Context, repo, dir string, rep int) (Sample, error) {
	to := filepath.Join(dir, fmt.Sprintf("clone-%d", rep))
	start := time.Now()
	out, err := exec.CommandContext(ctx, "git", "clone", "-q", "--no-checkout", "file://"+repo, to).CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return Sample{}, fmt.Errorf("git clone: %v: %s", err, out)
	}
	if err := os.RemoveAll(to); err != nil {
		return Sample{}, err
	}
	return Sample{Ops: 1, Elapsed: d, Latency: []time.Duration{d}}, nil
}
