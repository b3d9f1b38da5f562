package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/bytesize"
)

// sourcePrefetchOptions are the arguments and flags of `nas source
// prefetch`.
type sourcePrefetchOptions struct {
	repo, id, prefix string
	parallel         int
	rate             bytesize.Flag // bytes a second, 0: no limit
	detach, cancel   bool
}

// newSourcePrefetchCmd builds `nas source prefetch`.
func newSourcePrefetchCmd() *cobra.Command {
	var o sourcePrefetchOptions
	cmd := &cobra.Command{
		Use:   "prefetch REPO SOURCE_ID [--prefix P] [--parallel N] [--rate 50MiB] [--detach | --cancel]",
		Short: "Fetch a source's objects ahead of their first reads, in the background",
		Long: "The gateway makes every object the source holds on its branch (under --prefix, a repository key prefix) " +
			"local, --parallel at a time and at most --rate bytes a second in all, as a first read would: later reads, " +
			"on any branch or fork, are local. It runs on the gateway; this command shows its progress until it ends " +
			"(--detach returns at once; Ctrl-C stops watching and leaves it running). Prefetching again resumes a job " +
			"that was cancelled, interrupted or failed: what is local is skipped. Objects that changed at the remote " +
			"(`nas source refresh` re-pins them) or that it cannot serve are counted, not fatal; a remote that is down " +
			"fails the job. --cancel stops the job under way. Exit 1 when the job did not finish.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			return runSourcePrefetch(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.prefix, "prefix", "", "only the repository keys under this prefix (default: the whole source)")
	f.IntVar(&o.parallel, "parallel", 4, "objects fetched at once (at most 64)")
	f.Var(&o.rate, "rate", "at most this many bytes a second in all, e.g. 50MiB (default: no limit)")
	f.BoolVar(&o.detach, "detach", false, "return once the job started ('nas source status' shows its progress)")
	f.BoolVar(&o.cancel, "cancel", false, "stop the prefetch under way (what was fetched stays local)")
	return cmd
}

// runSourcePrefetch starts (or cancels) the job and, unless detached,
// watches it to its end.
func runSourcePrefetch(ctx context.Context, o sourcePrefetchOptions) error {
	if o.detach && o.cancel {
		return usagef("--detach and --cancel exclude each other")
	}
	if o.parallel < 1 || o.parallel > 64 {
		return usagef("--parallel %d: want 1 to 64", o.parallel)
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	if err := checkSourceRepo(ctx, c, o.repo, o.id); err != nil {
		return err
	}
	req := apiv1.SourcePrefetchRequest{ID: o.id, Prefix: o.prefix, Parallel: o.parallel, BytesPerSecond: o.rate.V, Cancel: o.cancel}
	if o.cancel {
		req = apiv1.SourcePrefetchRequest{ID: o.id, Cancel: true}
	}
	var out apiv1.SourcePrefetchResponse
	if err := c.do(ctx, req, &out); err != nil {
		return err
	}
	p := out.Prefetch
	if o.detach {
		return printPrefetch(p, fmt.Sprintf("prefetching %s in the background; `nas source status %s %s` shows its progress", o.id, o.repo, o.id), nil)
	}
	if o.cancel {
		return printPrefetch(p, prefetchLine(&p), nil)
	}
	if p, err = watchPrefetch(ctx, c, o.repo, o.id); err != nil {
		return err
	}
	return printPrefetch(p, prefetchLine(&p), prefetchOutcome(&p, o.repo))
}

// checkSourceRepo refuses a source that is not repo's (a usage error).
func checkSourceRepo(ctx context.Context, c *client, repo, id string) error {
	var got apiv1.SourceResponse
	if err := c.do(ctx, apiv1.SourceGetRequest{ID: id}, &got); err != nil {
		return err
	}
	if got.Source.Repo != repo {
		return usagef("source %s belongs to repository %s, not %s", id, got.Source.Repo, repo)
	}
	return nil
}

// printPrefetch prints line, or with --json the job as source/prefetch
// answers it; then it returns failure (nil: none).
func printPrefetch(p apiv1.SourcePrefetch, line string, failure error) error {
	if cf.json {
		if err := printJSON(&apiv1.SourcePrefetchResponse{Prefetch: p}); err != nil {
			return err
		}
		return failure
	}
	fmt.Println(line)
	return failure
}

// prefetchOutcome is the error of a job that did not finish: the exit
// status is then 1.
func prefetchOutcome(p *apiv1.SourcePrefetch, repo string) error {
	switch p.State {
	case "done", "running":
		return nil
	}
	return fmt.Errorf("prefetch of %s %s: %s (`nas source prefetch %s %s` resumes it)", p.Source, p.State, p.Error, repo, p.Source)
}

// prefetchPoll is how often a watcher asks the gateway.
const prefetchPoll = 500 * time.Millisecond

// watchPrefetch polls source/status (without its scan) until the job
// ends, showing a progress bar of its bytes on standard error when
// standard output is a terminal (and not --json), so standard output holds
// only the outcome. Ctrl-C stops the watching, not the job.
func watchPrefetch(ctx context.Context, c *client, repo, id string) (apiv1.SourcePrefetch, error) {
	var bar *progress
	var shown int64
	defer func() { bar.finish() }()
	for {
		var out apiv1.SourceStatusResponse
		err := c.do(ctx, apiv1.SourceStatusRequest{ID: id, NoScan: true}, &out)
		if ctx.Err() != nil {
			return apiv1.SourcePrefetch{}, fmt.Errorf("stopped watching; the prefetch of %s keeps running on the gateway "+
				"(`nas source status %s %s` shows it, `nas source prefetch %s %s --cancel` stops it)", id, repo, id, repo, id)
		}
		if err != nil {
			return apiv1.SourcePrefetch{}, err
		}
		p := out.Status.Prefetch
		if p == nil {
			return apiv1.SourcePrefetch{}, errors.New("the gateway shows no prefetch of " + id)
		}
		if p.State != "running" {
			return *p, nil
		}
		if bar == nil && p.TotalEntries > 0 {
			bar = newProgress(p.TotalBytes, "prefetch "+p.Source)
		}
		done := min(p.LocalBytes+p.ReceivedBytes, p.TotalBytes)
		bar.add(done - shown)
		shown = done
		select {
		case <-ctx.Done():
		case <-time.After(prefetchPoll):
		}
	}
}

// prefetchLine says how a job ended (or that it runs).
func prefetchLine(p *apiv1.SourcePrefetch) string {
	line := fmt.Sprintf("prefetch %s %s: %d of %d objects, %d fetched (%s), %d already local%s", p.Source, p.State,
		p.Entries, p.TotalEntries, p.FetchedEntries, sourceBytes(p.FetchedBytes), p.LocalEntries, prefetchProblems(p))
	if p.Error != "" {
		line += "; " + p.Error
	}
	return line
}

// prefetchProblems names the drifted and unavailable objects, if any.
func prefetchProblems(p *apiv1.SourcePrefetch) string {
	var s string
	if p.Drifted > 0 {
		s += fmt.Sprintf(", %d changed at the remote (%s; `nas source refresh` re-pins them)", p.Drifted, strings.Join(p.DriftedKeys, ", "))
	}
	if p.Unavailable > 0 {
		s += fmt.Sprintf(", %d unavailable (%s)", p.Unavailable, strings.Join(p.UnavailableKeys, ", "))
	}
	return s
}

// sourceBytes writes a byte count for people (KiB, MiB, ...).
func sourceBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v, i = v/unit, i+1
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTP"[i])
}

// percentOf is part of whole in percent ("100%" of nothing).
func percentOf(part, whole int64) string {
	if whole <= 0 {
		return "100%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

// sourceStatusOptions are the arguments of `nas source status`.
type sourceStatusOptions struct {
	repo, id string
}

// newSourceStatusCmd builds `nas source status`.
func newSourceStatusCmd() *cobra.Command {
	var o sourceStatusOptions
	return &cobra.Command{
		Use:   "status REPO SOURCE_ID",
		Short: "Show how much of a source is local, and its prefetch",
		Long: "Counts the source's objects on its branch and their bytes, in all and local, and shows the prefetch under " +
			"way or the last one. Counting reads the gateway's record of fetched blocks once per object, so it takes " +
			"about as long as listing the source's prefix.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			return runSourceStatus(cmd.Context(), o)
		},
	}
}

// runSourceStatus prints one line, or with --json source/status's answer.
func runSourceStatus(ctx context.Context, o sourceStatusOptions) error {
	var out apiv1.SourceStatusResponse
	if err := doCall(ctx, apiv1.SourceStatusRequest{ID: o.id}, &out); err != nil {
		return err
	}
	s := out.Status
	if s.Repo != o.repo {
		return usagef("source %s belongs to repository %s, not %s", o.id, s.Repo, o.repo)
	}
	if cf.json {
		return printJSON(&out)
	}
	line := fmt.Sprintf("%s\t%s/%s\t%s\t%s of %s local (%s), %d of %d objects", s.Source, s.Repo, s.Branch, orDash(s.Prefix),
		sourceBytes(s.LocalBytes), sourceBytes(s.Bytes), percentOf(s.LocalBytes, s.Bytes), s.LocalEntries, s.Entries)
	if p := s.Prefetch; p != nil {
		line += fmt.Sprintf("\tprefetch %s: %s fetched%s", p.State, sourceBytes(p.FetchedBytes), prefetchProblems(p))
		if p.Error != "" {
			line += "; " + p.Error
		}
	}
	fmt.Println(line)
	return nil
}
