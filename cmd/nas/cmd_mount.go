package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/bytesize"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/fuse"
	"github.com/agentnas/nas/gateway"
)

// mountOptions are the argument and flags of `nas mount`.
type mountOptions struct {
	dir          string
	repo, branch string
	readOnly     bool
	at, prefix   string
	cacheDir     string
	cacheSize    string
	commitAfter  time.Duration
	ttl          time.Duration
	debug        bool
	writeback    bool
	pprofAddr    string
}

// newMountCmd builds `nas mount`: a branch as a directory through FUSE.
func newMountCmd() *cobra.Command {
	var o mountOptions
	cmd := &cobra.Command{
		Use:   "mount DIR [--repo REPO] [--branch BRANCH] [--read-only] [--at COMMIT|CHECKPOINT] [--prefix P]",
		Short: "Mount a branch as a directory (FUSE), through the gateway and its lease checks",
		Long: "Mount a branch at DIR and serve it in the foreground until SIGINT or SIGTERM (or `nas unmount DIR`).\n" +
			"Credentials as for every client command: --lease-json FILE (repository and branch come from it),\n" +
			"the AWS_* variables of a lease (repository and branch are asked of the gateway), or the owner's NAS_*\n" +
			"variables with --repo (and --branch, default main).\n" +
			"--at mounts the branch as of a commit of its history (or a checkpoint's, NAME or BRANCH@NAME), read-only:\n" +
			"it turns --read-only on. --prefix P mounts the subtree P/: the mount's root is P/, nothing above it is\n" +
			"reachable, and writes land under P/.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return runMount(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "repository to mount (default: the lease's)")
	f.StringVar(&o.branch, "branch", "", "branch to mount (default: the lease's branch, else main)")
	f.BoolVar(&o.readOnly, "read-only", false, "refuse every change (EROFS)")
	f.StringVar(&o.at, "at", "", "mount as of this commit ID or checkpoint (implies --read-only)")
	f.StringVar(&o.prefix, "prefix", "", "mount only the subtree under this key prefix (P/ is the mount's root)")
	f.StringVar(&o.cacheDir, "cache-dir", "", "chunk cache and staging area, shared by the host's mounts (default ~/.cache/nas)")
	f.StringVar(&o.cacheSize, "cache-size", "10GiB", "bound of the chunk cache")
	f.DurationVar(&o.commitAfter, "commit-after", 5*time.Second, "commit the branch after this long without changes (0: only fsync of the root commits)")
	f.DurationVar(&o.ttl, "ttl", time.Second, "how long names and attributes are trusted before asking the gateway again")
	f.BoolVar(&o.debug, "debug", false, "log every FUSE request")
	f.BoolVar(&o.writeback, "writeback", false, "close and unlink return once the mount has noted the change, which goes to the gateway moments later, small files in batches (fsync and unmount wait for it; a refusal shows at fsync; a crash of the mount loses what it had not sent); off: close returns once the gateway has the file")
	f.StringVar(&o.pprofAddr, "pprof-addr", "", "serve Go's profiles (/debug/pprof/) of the mount on this loopback address, without authentication (off by default)")
	return cmd
}

// runMount mounts the branch at o.dir and serves it in the foreground
// until it is unmounted or ctx ends.
func runMount(ctx context.Context, o mountOptions) error {
	if o.pprofAddr != "" && !gateway.IsLoopback(o.pprofAddr) {
		return usagef("--pprof-addr %s: profiles are served on a loopback address only", o.pprofAddr)
	}
	cfg, lf, err := resolveClient()
	if err != nil {
		return err
	}
	c := nasclient.New(cfg)
	repo, br, err := mountTarget(ctx, c, lf, o)
	if err != nil {
		return err
	}
	at, err := mountAt(ctx, repo, o.at)
	if err != nil {
		return err
	}
	limit, err := bytesize.Parse(o.cacheSize)
	if err != nil {
		return usagef("--cache-size: %v", err)
	}
	commitAfter := o.commitAfter
	if commitAfter == 0 {
		commitAfter = -1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if o.pprofAddr != "" {
		go serveProfiles(ctx, o.pprofAddr, log)
	}
	m, err := fuse.New(ctx, o.dir, fuse.Options{Client: c, Repo: repo, Branch: br, ReadOnly: o.readOnly || at != "", At: at, Prefix: o.prefix, CacheDir: o.cacheDir,
		CacheLimit: limit, CommitAfter: commitAfter, TTL: o.ttl, Log: log, Debug: o.debug, Stream: true, Writeback: o.writeback})
	if err != nil {
		return err
	}
	what := repo + "@" + br
	if at != "" {
		what += " as of " + at + " (read-only)"
	}
	if o.prefix != "" {
		what += ", subtree " + o.prefix
	}
	fmt.Fprintf(os.Stderr, "mounted %s at %s (SIGINT or `nas unmount %s` to stop)\n", what, o.dir, o.dir)
	return serveMount(ctx, m, o.dir)
}

// mountTarget is the repository and branch to mount: the flags', else the
// lease file's, else (with a lease's credentials) the lease's as the
// gateway tells; the branch defaults to main.
func mountTarget(ctx context.Context, c *nasclient.Client, lf *nasclient.LeaseFile, o mountOptions) (repo, br string, err error) {
	repo, br = o.repo, o.branch
	if lf != nil {
		repo, br = cmp.Or(repo, lf.Repo), cmp.Or(br, lf.Branch)
	}
	if (repo == "" || br == "") && c.Temporary() {
		var out apiv1.LeaseGetResponse
		if err := wrapClient(c).do(ctx, apiv1.LeaseGetRequest{}, &out); err != nil {
			return "", "", fmt.Errorf("ask the gateway for the lease's branch: %w", err)
		}
		repo, br = cmp.Or(repo, out.Lease.Repo), cmp.Or(br, out.Lease.Branch)
	}
	if repo == "" {
		return "", "", usagef("nas mount: name the repository with --repo (or mount with a lease's credentials)")
	}
	return repo, cmp.Or(br, "main"), nil
}

// serveMount waits until the mount at dir ends: unmounted from outside,
// it commits what is pending; when ctx ends, it unmounts (which commits).
func serveMount(ctx context.Context, m *fuse.Mount, dir string) error {
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-done:
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := m.Settle(sctx); err != nil {
			return fmt.Errorf("%s was unmounted, but committing its changes failed: %w", dir, err)
		}
		fmt.Fprintf(os.Stderr, "unmounted %s\n", dir)
		return nil
	case <-ctx.Done():
	}
	uctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := m.Unmount(uctx)
	<-done
	if err != nil {
		return fmt.Errorf("unmounted %s, but: %w", dir, err)
	}
	fmt.Fprintf(os.Stderr, "unmounted %s\n", dir)
	return nil
}

// mountAt is the commit ID --at names: a commit ID as given, else a
// checkpoint's commit (NAME or BRANCH@NAME); "" mounts the branch's
// current state.
func mountAt(ctx context.Context, repo, at string) (string, error) {
	if at == "" {
		return "", nil
	}
	if _, err := hex.DecodeString(at); err == nil && len(at) == 64 {
		return at, nil
	}
	commit, err := checkpointCommit(ctx, repo, at)
	if err != nil {
		return "", err
	}
	if commit == "" {
		return "", usagef("--at %s: not a commit ID or a checkpoint of %s", at, repo)
	}
	return commit, nil
}
