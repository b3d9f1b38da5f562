package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	nasclient "github.com/agentnas/nas/client"
)

// mirrorOptions are the arguments and flags of `nas mirror`.
type mirrorOptions struct {
	src, dst       string
	remove, dryRun bool
	parallel       int
}

// newMirrorCmd builds `nas mirror`.
func newMirrorCmd() *cobra.Command {
	var o mirrorOptions
	cmd := &cobra.Command{
		Use:   "mirror SRC DST [--remove] [--dry-run] [--parallel N]",
		Short: "Make a directory or prefix DST hold what SRC holds",
		Long: `Mirror copies every file or object of the directory or prefix SRC that DST
lacks or holds in another version, and with --remove deletes what DST holds
that SRC does not. A file and an object are the same version when their sizes
are equal and the source is not newer than the target (to the millisecond;
the gateway's clock stamps uploads, so keep clocks in step); two objects are
the same when their sizes and ETags are. A second mirror of unchanged data
copies nothing. --dry-run says what would change and changes nothing.
--json prints one NDJSON line per file copied or deleted (as cp does, with
dry_run for --dry-run). A progress bar is shown on standard error when
standard output is a terminal and --json is not set.

` + addressHelp,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.src, o.dst = args[0], args[1]
			return runMirror(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.remove, "remove", false, "delete what DST holds that SRC does not")
	f.BoolVar(&o.dryRun, "dry-run", false, "say what would be copied and deleted, change nothing")
	f.IntVar(&o.parallel, "parallel", 4, "files (and parts of a large file) in flight at once")
	return cmd
}

// entry is what mirror compares of a file or an object.
type entry struct {
	size int64
	mod  time.Time
	etag string
}

// runMirror compares both sides, copies what differs and removes extras.
func runMirror(ctx context.Context, o mirrorOptions) error {
	src, dst, err := parsePair(o.src, o.dst, o.parallel)
	if err != nil {
		return err
	}
	c, err := newObjClient()
	if err != nil {
		return err
	}
	if !src.isLocal() && !dst.isLocal() {
		if src.obj, err = c.sourceBranch(ctx, src.obj, dst.obj); err != nil {
			return err
		}
	}
	have, err := listSide(ctx, c, src, true)
	if err != nil {
		return hintLocal(err, src)
	}
	had, err := listSide(ctx, c, dst, false)
	if err != nil {
		return err
	}
	jobs, same := planMirror(c, src, dst, have, had, o.parallel)
	if dst.isLocal() && !o.dryRun && len(jobs) > 0 {
		if err := os.MkdirAll(dst.local, 0o755); err != nil {
			return err
		}
	}
	rp := &reporter{}
	start := time.Now()
	if err := runJobs(ctx, jobs, o.parallel, o.dryRun, rp); err != nil {
		return err
	}
	copied := rp.done
	if o.remove {
		if err := removeExtra(ctx, c, dst, extra(have, had), o.dryRun, rp); err != nil {
			return err
		}
	}
	if !cf.json {
		verb := ""
		if o.dryRun {
			verb = " (dry run: nothing changed)"
		}
		fmt.Printf("mirror %s -> %s: %d copied, %d deleted, %d up to date, %d bytes in %s%s\n", src, dst,
			copied, rp.done-copied, same, rp.bytes, time.Since(start).Round(time.Millisecond), verb)
	}
	return rp.err()
}

// listSide lists a directory or prefix: relative slash-separated names to
// entries. A missing local directory is empty unless it must exist.
func listSide(ctx context.Context, c *objClient, a address, mustExist bool) (map[string]entry, error) {
	m := map[string]entry{}
	if !a.isLocal() {
		prefix := dirPrefix(a.obj.Key)
		err := c.walk(ctx, a.obj, false, func(o nasclient.Listed) error {
			if !isDirKey(o.Key) {
				m[strings.TrimPrefix(o.Key, prefix)] = entry{size: o.Size, mod: o.LastModified, etag: o.ETag}
			}
			return nil
		})
		return m, err
	}
	st, err := os.Stat(a.local)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !mustExist:
		return m, nil
	case err != nil:
		return nil, err
	case !st.IsDir():
		return nil, usagef("mirror: %s is not a directory", a.local)
	}
	err = localFiles(a.local, func(rel string, info fs.FileInfo) {
		m[rel] = entry{size: info.Size(), mod: info.ModTime()}
	})
	return m, err
}

// stale reports whether the target t of the source s must be copied
// again.
func stale(s, t entry, byETag bool) bool {
	if s.size != t.size {
		return true
	}
	if byETag {
		return s.etag != t.etag
	}
	return s.mod.Truncate(time.Millisecond).After(t.mod.Truncate(time.Millisecond))
}

// planMirror lists the copies that bring dst up to date with src, in
// name order, and counts the names already up to date.
func planMirror(c *objClient, src, dst address, have, had map[string]entry, parallel int) ([]job, int) {
	var jobs []job
	same := 0
	for _, rel := range slices.Sorted(maps.Keys(have)) {
		s := have[rel]
		if t, ok := had[rel]; ok && !stale(s, t, !src.isLocal() && !dst.isLocal()) {
			same++
			continue
		}
		so, do := src.obj, dst.obj
		so.Key, do.Key = dirPrefix(so.Key)+rel, dirPrefix(do.Key)+rel
		switch {
		case src.isLocal():
			jobs = append(jobs, uploadJob(c, filepath.Join(src.local, filepath.FromSlash(rel)), s.size, do, parallel))
		case dst.isLocal():
			jobs = append(jobs, downloadJob(c, so, s.size, dst.local, rel))
		default:
			jobs = append(jobs, copyJob(c, so, s.size, do))
		}
	}
	return jobs, same
}

// extra is what the target holds that the source does not, in order.
func extra(have, had map[string]entry) []string {
	var out []string
	for rel := range had {
		if _, ok := have[rel]; !ok {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}
