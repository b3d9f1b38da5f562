package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gateway"
)

// gcOptions are the flags of `nas gc`.
type gcOptions struct {
	data                    string
	retention, uploadExpiry time.Duration
	deletedKeep             time.Duration // --deleted-retention, offline only
	meta                    string        // shared stores, offline only
	store                   chunkFlags
}

// newGCCmd builds `nas gc`.
func newGCCmd() *cobra.Command {
	var o gcOptions
	cmd := &cobra.Command{
		Use:   "gc [--data DIR]",
		Short: "Reclaim chunks, nodes and history no branch, retained commit or upload needs",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGC(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.data, "data", "", "collect in this data directory offline")
	cmd.Flags().DurationVar(&o.retention, "retention", branch.DefaultRetention, "keep history younger than this")
	cmd.Flags().DurationVar(&o.uploadExpiry, "upload-expiry", branch.DefaultUploadExpiry, "abort multipart uploads older than this")
	cmd.Flags().DurationVar(&o.deletedKeep, "deleted-retention", branch.DefaultDeletedRetention,
		"with --data: keep deleted branches restorable this long (a running gateway uses its own 'nas serve --deleted-retention')")
	sharedStoreFlags(cmd, &o.meta, &o.store)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("deleted-retention") && o.data == "" {
			return usagef("--deleted-retention applies with --data; a running gateway keeps deleted branches as its own --deleted-retention says")
		}
		return nil
	}
	return cmd
}

// runGC collects garbage in the data directory, or asks the gateway to
// collect in its own, and prints what was reclaimed.
func runGC(ctx context.Context, o gcOptions) error {
	if o.meta != "" && o.data == "" {
		return usagef("--meta and --chunks go with --data (a local directory for this command's own files)")
	}
	var out apiv1.GCResponse
	var err error
	if o.data != "" {
		c := gateway.Config{DataDir: o.data, Meta: o.meta}
		o.store.apply(&c)
		out, err = gcOffline(ctx, c, o.deletedKeep, branch.GCOptions{Retention: o.retention, UploadExpiry: o.uploadExpiry})
	} else {
		req := apiv1.GCRequest{RetentionSeconds: int64(o.retention / time.Second), UploadExpirySeconds: int64(o.uploadExpiry / time.Second)}
		err = doCall(ctx, req, &out)
	}
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	return printJSON(&out.Stats)
}

// gcOffline collects garbage in the data directory or shared stores c
// names (every gateway on them must be stopped) and reports as admin/gc does.
func gcOffline(ctx context.Context, c gateway.Config, deletedKeep time.Duration, o branch.GCOptions) (apiv1.GCResponse, error) {
	g, err := gateway.Open(c)
	if err != nil {
		return apiv1.GCResponse{}, err
	}
	defer g.Close()
	g.Branches.SetDeletedRetention(deletedKeep)
	st, err := g.Branches.Collect(ctx, o)
	if err != nil {
		return apiv1.GCResponse{}, err
	}
	return apiv1.GCResponse{Stats: apiv1.GCStats{Commits: st.Commits, ExpiredCommits: st.ExpiredCommits, Versions: st.Versions,
		Uploads: st.Uploads, DeletedBranches: st.DeletedBranches, Trash: st.Trash, Nodes: st.Nodes, Contents: st.Contents, Chunks: apiv1.SweepStats(st.Chunks)}}, nil
}
