package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// addressHelp is the address rule, for the help of every object command.
const addressHelp = `Addresses: REPO/PATH (the default branch, or a lease's own); REPO@BRANCH/PATH,
where BRANCH ends at the first '/'; REPO@BRANCH:/PATH, where BRANCH ends at the
':' (for nested branches such as cleo/run-1); nas://ADDRESS, always the
gateway's. PATH is the key as written. Anything else is a local path: it
starts with '/' or '.', its first segment is no repository name, or it is a
word without '/'. Write ./NAME/... for a local NAME that could be a repository.`

// cpOptions are the arguments and flags of `nas cp`.
type cpOptions struct {
	src, dst  string
	recursive bool
	parallel  int
}

// newCpCmd builds `nas cp`.
func newCpCmd() *cobra.Command {
	var o cpOptions
	cmd := &cobra.Command{
		Use:   "cp SRC DST [--recursive] [--parallel N]",
		Short: "Copy files and objects: local to gateway, gateway to local, gateway to gateway",
		Long: `Cp copies a file or object. With --recursive SRC is a directory or a prefix
(PATH and PATH/ both mean the keys under PATH/) and its contents go under DST.
A DST that ends with '/' (or, locally, is a directory) receives SRC's base
name. Files of 16 MiB or more go up as multipart uploads (aborted on failure);
a copy between two gateway addresses, across branches and repositories too,
happens on the gateway and moves no bytes. Content-Type is set by extension.
--json prints one NDJSON line per file (action, src, dst, size, etag,
multipart, error). A progress bar is shown on standard error when standard
output is a terminal and --json is not set.

` + addressHelp,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.src, o.dst = args[0], args[1]
			return runCp(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVarP(&o.recursive, "recursive", "r", false, "copy a directory or prefix and everything under it")
	cmd.Flags().IntVar(&o.parallel, "parallel", 4, "files (and parts of a large file) in flight at once")
	return cmd
}

// parsePair parses a transfer's source and destination; two local paths
// are a usage error (that is cp(1)'s job).
func parsePair(src, dst string, parallel int) (address, address, error) {
	s, err := parseAddress(src, false)
	if err != nil {
		return s, s, err
	}
	d, err := parseAddress(dst, false)
	if err != nil {
		return s, d, err
	}
	if s.isLocal() && d.isLocal() {
		return s, d, usagef("%s and %s are both local paths: one must be a gateway address (REPO[@BRANCH]/PATH)", s, d)
	}
	if parallel < 1 {
		return s, d, usagef("--parallel must be at least 1")
	}
	return s, d, nil
}

// runCp plans the copy, runs it and sums it up.
func runCp(ctx context.Context, o cpOptions) error {
	src, dst, err := parsePair(o.src, o.dst, o.parallel)
	if err != nil {
		return err
	}
	c, err := newObjClient()
	if err != nil {
		return err
	}
	jobs, err := planCp(ctx, c, src, dst, o)
	if err != nil {
		return hintLocal(err, src)
	}
	rp := &reporter{single: len(jobs) == 1 && !o.recursive}
	start := time.Now()
	if err := runJobs(ctx, jobs, o.parallel, false, rp); err != nil {
		return err
	}
	if !cf.json && (!rp.single || rp.quiet) { // a bar hid the per-file line
		fmt.Printf("copied %d file(s), %d bytes in %s\n", rp.done, rp.bytes, time.Since(start).Round(time.Millisecond))
	}
	return hintLocal(rp.err(), src)
}

// hintLocal adds to a gateway's "no such repository" the way to name a
// local path that was read as a gateway address.
func hintLocal(err error, a address) error {
	if err == nil || a.isLocal() || nasclient.Code(err) != "NoSuchBucket" {
		return err
	}
	if _, serr := os.Stat(a.String()); serr == nil {
		return fmt.Errorf("%w (the local %s is written ./%s)", err, a, a)
	}
	return err
}

// planCp lists what the copy moves.
func planCp(ctx context.Context, c *objClient, src, dst address, o cpOptions) ([]job, error) {
	switch {
	case src.isLocal():
		return planUpload(c, src.local, dst.obj, o.recursive, o.parallel)
	case dst.isLocal():
		return planDownload(ctx, c, src.obj, dst.local, o.recursive)
	}
	s, err := c.sourceBranch(ctx, src.obj, dst.obj)
	if err != nil {
		return nil, err
	}
	return planCopy(ctx, c, s, dst.obj, o.recursive)
}

// isDirKey reports whether key names a directory: the root, or a key
// ending with '/'.
func isDirKey(key string) bool { return key == "" || strings.HasSuffix(key, "/") }

// planUpload plans the upload of a file, or of a directory's files.
func planUpload(c *objClient, p string, dst nasclient.Object, recursive bool, parallel int) ([]job, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		if isDirKey(dst.Key) {
			dst.Key += filepath.Base(p)
		}
		return []job{uploadJob(c, p, st.Size(), dst, parallel)}, nil
	}
	if !recursive {
		return nil, usagef("%s is a directory (use --recursive)", p)
	}
	var jobs []job
	err = localFiles(p, func(rel string, info fs.FileInfo) {
		d := dst
		d.Key = dirPrefix(dst.Key) + rel
		jobs = append(jobs, uploadJob(c, filepath.Join(p, filepath.FromSlash(rel)), info.Size(), d, parallel))
	})
	return jobs, err
}

// uploadJob uploads file p (size bytes when planned) as dst.
func uploadJob(c *objClient, p string, size int64, dst nasclient.Object, parallel int) job {
	return job{res: fileResult{Action: "upload", Src: p, Dst: describe(dst), Size: size, Multipart: size >= partSize},
		run: func(ctx context.Context, pr *progress) (fileResult, error) {
			return upload(ctx, c, p, dst, parallel, pr)
		}}
}

// localFiles hands fn the regular files under dir, as slash-separated
// paths relative to dir with their stat; other kinds are skipped with a
// warning.
func localFiles(dir string, fn func(rel string, info fs.FileInfo)) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			fmt.Fprintf(os.Stderr, "nas: skipped %s: not a regular file\n", p)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel), info)
		return nil
	})
}

// planDownload plans the download of an object, or of a prefix's objects.
func planDownload(ctx context.Context, c *objClient, src nasclient.Object, dst string, recursive bool) ([]job, error) {
	if !recursive {
		if isDirKey(src.Key) {
			return nil, usagef("%s names a directory (use --recursive)", describe(src))
		}
		if st, err := os.Stat(dst); strings.HasSuffix(dst, "/") || err == nil && st.IsDir() {
			dst = filepath.Join(dst, path.Base(src.Key))
		}
		return []job{downloadJob(c, src, -1, filepath.Dir(dst), filepath.Base(dst))}, nil
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	prefix := dirPrefix(src.Key)
	var jobs []job
	err := c.walk(ctx, src, false, func(obj nasclient.Listed) error {
		if isDirKey(obj.Key) { // a directory marker
			return nil
		}
		o := src
		o.Key = obj.Key
		jobs = append(jobs, downloadJob(c, o, obj.Size, dst, strings.TrimPrefix(obj.Key, prefix)))
		return nil
	})
	return jobs, err
}

// downloadJob downloads src (size bytes when listed, -1 unknown) to rel
// (slash-separated) inside the directory dir; a rel that is not a local
// name (.., an absolute path, empty segments) fails on its own.
func downloadJob(c *objClient, src nasclient.Object, size int64, dir, rel string) job {
	name := filepath.FromSlash(rel)
	res := fileResult{Action: "download", Src: describe(src), Dst: filepath.Join(dir, name), Size: size}
	return job{res: res, run: func(ctx context.Context, p *progress) (fileResult, error) {
		if path.Clean(rel) != rel || !filepath.IsLocal(name) {
			return res, fmt.Errorf("key %q is not a local file name under %s", src.Key, dir)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return res, err
		}
		defer root.Close()
		return download(ctx, c, src, root, name, p)
	}}
}

// planCopy plans a copy on the gateway of an object, or of a prefix's
// objects.
func planCopy(ctx context.Context, c *objClient, src, dst nasclient.Object, recursive bool) ([]job, error) {
	if !recursive {
		if isDirKey(src.Key) {
			return nil, usagef("%s names a directory (use --recursive)", describe(src))
		}
		if isDirKey(dst.Key) {
			dst.Key += path.Base(src.Key)
		}
		return []job{copyJob(c, src, 0, dst)}, nil
	}
	prefix := dirPrefix(src.Key)
	var jobs []job
	err := c.walk(ctx, src, false, func(obj nasclient.Listed) error {
		s, d := src, dst
		s.Key, d.Key = obj.Key, dirPrefix(dst.Key)+strings.TrimPrefix(obj.Key, prefix)
		jobs = append(jobs, copyJob(c, s, obj.Size, d))
		return nil
	})
	return jobs, err
}

// copyJob copies src to dst on the gateway.
func copyJob(c *objClient, src nasclient.Object, size int64, dst nasclient.Object) job {
	return job{res: fileResult{Action: "copy", Src: describe(src), Dst: describe(dst), Size: size},
		run: func(ctx context.Context, p *progress) (fileResult, error) {
			return copyObject(ctx, c, src, size, dst, p)
		}}
}

// sourceBranch names src's branch when the gateway would otherwise read
// it from dst's: within one repository, x-amz-copy-source without a
// branch means the destination's branch, so the owner's "default branch"
// becomes its name. (A lease's "" is its own branch, the only one it
// writes, so it needs no name.)
func (c *objClient) sourceBranch(ctx context.Context, src, dst nasclient.Object) (nasclient.Object, error) {
	if src.Repo != dst.Repo || src.Branch != "" || dst.Branch == "" || c.Temporary() {
		return src, nil
	}
	var out apiv1.RepoResponse
	if err := c.Do(ctx, apiv1.RepoGetRequest{Repo: src.Repo}, &out); err != nil {
		return src, fmt.Errorf("find the default branch of %s: %w", src.Repo, err)
	}
	if out.Repo.DefaultBranch == "" {
		return src, errors.New("the gateway names no default branch of " + src.Repo)
	}
	src.Branch = out.Repo.DefaultBranch
	return src, nil
}
