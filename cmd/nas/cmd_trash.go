package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newTrashCmd builds `nas trash`: what merges deleted from protected
// branches.
func newTrashCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trash", Short: "What merges deleted from protected branches, kept 7 days (owner only)"}
	cmd.AddCommand(newTrashListCmd(), newTrashRestoreCmd())
	return cmd
}

// trashListOptions are the arguments of `nas trash list`.
type trashListOptions struct {
	repo   string
	prefix string // "": everything
}

// newTrashListCmd builds `nas trash list`.
func newTrashListCmd() *cobra.Command {
	var o trashListOptions
	return &cobra.Command{
		Use:   "list REPO [PREFIX]",
		Short: "List trashed objects",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.prefix = args[0], optArg(args, 1)
			return runTrashList(cmd.Context(), o)
		},
	}
}

// runTrashList prints the trashed objects as JSON.
func runTrashList(ctx context.Context, o trashListOptions) error {
	return jsonCall(ctx, apiv1.TrashListRequest{Repo: o.repo, Prefix: o.prefix}, &apiv1.TrashListResponse{})
}

// trashRestoreOptions are the arguments of `nas trash restore`.
type trashRestoreOptions struct{ repo, path string }

// newTrashRestoreCmd builds `nas trash restore`.
func newTrashRestoreCmd() *cobra.Command {
	var o trashRestoreOptions
	return &cobra.Command{
		Use:   "restore REPO PATH",
		Short: "Put a trashed object back with a commit",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.path = args[0], args[1]
			return runTrashRestore(cmd.Context(), o)
		},
	}
}

// runTrashRestore puts the object back and prints the answer as JSON.
func runTrashRestore(ctx context.Context, o trashRestoreOptions) error {
	return jsonCall(ctx, apiv1.TrashRestoreRequest{Repo: o.repo, Path: o.path}, &apiv1.RestoreResponse{})
}
