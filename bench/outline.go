package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
)

// The outline workload: a budgeted read of one large Markdown file as an
// outline within 400 tokens (files/read over HTTP: authorize, load the
// committed object, parse the heading tree, fit the budget, hash the
// evidence), beside what an agent without it would run on a copy of the
// same file: grep for its headings (which answers every heading, not a
// budgeted outline), and a plain GET of the whole file.

// outlineSubject is the workload's reference subject.
const outlineSubject = "nas files/read outline, 400 tokens"

// init registers the outline workload.
func init() {
	Register(Workload{Name: "outline", Doc: "budgeted read of a large Markdown file as a 400-token outline, against grep for its headings and a GET of the whole file", Run: runOutline})
}

// outlineBytes is the size of the workload's Markdown file in a mode.
func outlineBytes(mode string) int {
	if mode == "tiny" {
		return 1 << 20
	}
	return 10 << 20
}

// outlineMarkdown is a Markdown file of about n bytes: chapters of
// sections of paragraphs, the shape of a long report.
func outlineMarkdown(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# Report\n\n")
	para := strings.Repeat("The measured values agree with the model within the stated error. ", 12) + "\n\n"
	for ch := 0; b.Len() < n; ch++ {
		fmt.Fprintf(&b, "## Chapter %d\n\n", ch)
		for s := 0; s < 8 && b.Len() < n; s++ {
			fmt.Fprintf(&b, "### Section %d.%d\n\n%s%s", ch, s, para, para)
		}
	}
	return b.Bytes()
}

func runOutline(ctx context.Context, e *Env) ([]*Result, error) {
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	body := outlineMarkdown(outlineBytes(e.Profile.Mode))
	bucket, err := t.Bucket(ctx, "outline")
	if err != nil {
		return nil, err
	}
	const key = "docs/report.md"
	if err := t.Client.Put(ctx, bucket, key, bytes.NewReader(body), int64(len(body))); err != nil {
		return nil, err
	}
	if err := t.API.Do(ctx, apiv1.CommitCreateRequest{Repo: bucket, Branch: "main", Message: "report"}, nil); err != nil {
		return nil, err
	}
	dir, err := e.TempDir("outline")
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "report.md")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		return nil, err
	}
	var last apiv1.FileReadResponse
	const ops = 5
	rows, err := Compare(ctx, e.Profile.Reps, []Subject{
		{Name: outlineSubject, Measure: timedOps(ops, func() (int64, error) {
			r, err := t.API.ReadFile(ctx, apiv1.FileReadRequest{Repo: bucket, Branch: "main", Path: key, View: apiv1.ViewOutline, BudgetTokens: 400})
			if err == nil && (r.View != apiv1.ViewOutline || r.Tokens > 400) {
				err = fmt.Errorf("outline read answered view %s with %d tokens", r.View, r.Tokens)
			}
			if r != nil {
				last = *r
			}
			return int64(len(body)), err
		})},
		{Name: "grep -n '^#' (every heading, unbudgeted)", Baseline: true, Measure: timedOps(ops, func() (int64, error) {
			return int64(len(body)), exec.CommandContext(ctx, "grep", "-n", "^#", file).Run()
		})},
		{Name: "GET of the whole file", Baseline: true, Measure: timedOps(ops, func() (int64, error) {
			return t.Client.Get(ctx, bucket, key)
		})},
	}, ByTime)
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("%d MiB file; the outline answered %d tokens, truncated=%v", len(body)>>20, last.Tokens, last.Truncated)
	return []*Result{{Case: fmt.Sprintf("outline of a %d MiB Markdown file", len(body)>>20), Reference: outlineSubject, Rows: rows, Notes: []string{note}}}, nil
}

// timedOps measures n sequential runs of op as one sample; op returns
// the bytes it processed.
func timedOps(n int, op func() (int64, error)) func(context.Context, int) (Sample, error) {
	return func(ctx context.Context, _ int) (Sample, error) {
		var s Sample
		start := time.Now()
		for range n {
			t0 := time.Now()
			b, err := op()
			if err != nil {
				return s, err
			}
			s.Ops++
			s.Bytes += b
			s.Latency = append(s.Latency, time.Since(t0))
		}
		s.Elapsed = time.Since(start)
		return s, ctx.Err()
	}
}
