package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/gateway"
)

// fsckOptions are the flags of `nas fsck`.
type fsckOptions struct {
	data, meta string
	store      chunkFlags
}

// newFsckCmd builds `nas fsck`.
func newFsckCmd() *cobra.Command {
	var o fsckOptions
	cmd := &cobra.Command{
		Use:   "fsck [--data DIR]",
		Short: "Verify that every reference resolves and every chunk hashes to its name",
		Long: "With --data, fsck opens the data directory itself (the gateway must be stopped);\n" +
			"without it, it asks the running gateway.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFsck(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.data, "data", "", "check this data directory offline")
	sharedStoreFlags(cmd, &o.meta, &o.store)
	return cmd
}

// runFsck checks the data directory, or asks the gateway to check its
// own, and fails when a problem was found.
func runFsck(ctx context.Context, o fsckOptions) error {
	if o.meta != "" && o.data == "" {
		return usagef("--meta and --chunks go with --data (a local directory for this command's own files)")
	}
	var out apiv1.FsckResponse
	var err error
	if o.data != "" {
		c := gateway.Config{DataDir: o.data, Meta: o.meta}
		o.store.apply(&c)
		out, err = fsckOffline(ctx, c)
	} else {
		err = doCall(ctx, apiv1.FsckRequest{}, &out)
	}
	if err != nil {
		return err
	}
	if err := printFsck(&out); err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("fsck found %d problem(s)", len(out.Report.Problems))
	}
	return nil
}

// fsckOffline checks the data directory c names, or the shared stores
// (a gateway on the embedded store must be stopped; shared stores may be
// checked while gateways serve) and reports as admin/fsck does.
func fsckOffline(ctx context.Context, c gateway.Config) (apiv1.FsckResponse, error) {
	c.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := gateway.Open(c)
	if err != nil {
		return apiv1.FsckResponse{}, err
	}
	defer g.Close()
	rep, err := g.Branches.Check(ctx)
	if err != nil {
		return apiv1.FsckResponse{}, err
	}
	return apiv1.FsckResponse{OK: rep.OK(), Report: apiv1.FsckReport{Repos: rep.Repos, Branches: rep.Branches, Commits: rep.Commits,
		Entries: rep.Entries, Lazy: rep.Lazy, Chunks: apiv1.ChunkStats(rep.Chunks), Problems: rep.Problems}}, nil
}

// printFsck prints what fsck found: the answer with --json, else a
// summary and each problem.
func printFsck(out *apiv1.FsckResponse) error {
	if cf.json {
		return printJSON(out)
	}
	rep := &out.Report
	fmt.Printf("%d repositories, %d branches, %d commits, %d entries, %d chunks (%d bytes, %d segments)\n",
		rep.Repos, rep.Branches, rep.Commits, rep.Entries, rep.Chunks.Chunks, rep.Chunks.Bytes, rep.Chunks.Segments)
	for _, p := range rep.Problems {
		fmt.Println("problem:", p)
	}
	return nil
}

// sharedStoreFlags adds --meta and the chunk flags, which point an
// offline command at the stores gateways share instead of a data
// directory's.
func sharedStoreFlags(cmd *cobra.Command, meta *string, store *chunkFlags) {
	cmd.Flags().StringVar(meta, "meta", "", "with --data: the shared metadata store (postgres:// URL) the gateways use")
	store.add(cmd.Flags())
	cmd.MarkFlagsRequiredTogether("meta", "chunks")
}
