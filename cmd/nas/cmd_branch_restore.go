package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// branchRestoreOptions are the arguments and flags of `nas branch
// restore`.
type branchRestoreOptions struct{ repo, name, as string }

// newBranchRestoreCmd builds `nas branch restore`.
func newBranchRestoreCmd() *cobra.Command {
	var o branchRestoreOptions
	cmd := &cobra.Command{
		Use:   "restore REPO NAME [--as NEW]",
		Short: "Bring a deleted branch back at its last head (within 7 days of the delete, by default)",
		Long: `Bring a deleted branch back at the head it had when it was deleted.

A deleted branch stays restorable for the retention window (7 days unless
the gateway runs with another --deleted-retention); until then garbage
collection keeps its head and everything it reaches. Staged (uncommitted)
changes were discarded by the delete and do not come back.
A live branch of the same name is not replaced: restore under another name
with --as. The owner's operation: a lease cannot list or restore deleted
branches.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runBranchRestore(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.as, "as", "", "restore under this name instead")
	return cmd
}

// runBranchRestore restores the branch and says where it is.
func runBranchRestore(ctx context.Context, o branchRestoreOptions) error {
	var out apiv1.BranchResponse
	if err := doCall(ctx, apiv1.BranchRestoreRequest{Repo: o.repo, Name: o.name, As: o.as}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("restored branch %s at %s\n", out.Branch.Name, out.Branch.Head)
	return nil
}

// runBranchListDeleted prints the restorable deleted branches: name,
// head, when deleted and until when restorable.
func runBranchListDeleted(ctx context.Context, o branchListOptions) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	all := apiv1.BranchListDeletedResponse{Deleted: []apiv1.DeletedBranch{}}
	req := apiv1.BranchListDeletedRequest{Repo: o.repo}
	for {
		var page apiv1.BranchListDeletedResponse
		if err := c.do(ctx, req, &page); err != nil {
			return err
		}
		all.Deleted = append(all.Deleted, page.Deleted...)
		if page.NextCursor == "" {
			break
		}
		req.Cursor = page.NextCursor
	}
	if cf.json {
		return printJSON(&all)
	}
	for _, d := range all.Deleted {
		fmt.Printf("%s\t%s\tdeleted %s\trestorable until %s\n", d.Name, short(d.Head),
			d.DeletedAt.Local().Format(time.RFC3339), d.ExpiresAt.Local().Format(time.RFC3339))
	}
	return nil
}
