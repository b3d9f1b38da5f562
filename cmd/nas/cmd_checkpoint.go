package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newCheckpointCmd builds `nas checkpoint`: named states of a branch.
func newCheckpointCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "checkpoint", Short: "Name a branch's state and restore it later (owner only)"}
	cmd.AddCommand(newCheckpointCreateCmd(), newCheckpointListCmd(), newCheckpointRestoreCmd())
	return cmd
}

// checkpointCreateOptions are the arguments of `nas checkpoint create`.
type checkpointCreateOptions struct{ repo, branch, name string }

// newCheckpointCreateCmd builds `nas checkpoint create`.
func newCheckpointCreateCmd() *cobra.Command {
	var o checkpointCreateOptions
	return &cobra.Command{
		Use:   "create REPO BRANCH NAME",
		Short: "Name the branch's head commit",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch, o.name = args[0], args[1], args[2]
			return runCheckpointCreate(cmd.Context(), o)
		},
	}
}

// runCheckpointCreate names the branch's head commit.
func runCheckpointCreate(ctx context.Context, o checkpointCreateOptions) error {
	req := apiv1.CheckpointCreateRequest{Repo: o.repo, Branch: o.branch, Name: o.name}
	return simpleCall(ctx, req, &apiv1.CheckpointResponse{}, "checkpoint "+o.name+" of "+o.branch)
}

// checkpointListOptions are the arguments of `nas checkpoint list`.
type checkpointListOptions struct {
	repo   string
	branch string // "": every branch
}

// newCheckpointListCmd builds `nas checkpoint list`.
func newCheckpointListCmd() *cobra.Command {
	var o checkpointListOptions
	return &cobra.Command{
		Use:   "list REPO [BRANCH]",
		Short: "List checkpoints",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch = args[0], optArg(args, 1)
			return runCheckpointList(cmd.Context(), o)
		},
	}
}

// runCheckpointList prints the checkpoints as JSON.
func runCheckpointList(ctx context.Context, o checkpointListOptions) error {
	return jsonCall(ctx, apiv1.CheckpointListRequest{Repo: o.repo, Branch: o.branch}, &apiv1.CheckpointListResponse{})
}

// checkpointRestoreOptions are the arguments of `nas checkpoint restore`.
type checkpointRestoreOptions struct{ repo, branch, name string }

// newCheckpointRestoreCmd builds `nas checkpoint restore`.
func newCheckpointRestoreCmd() *cobra.Command {
	var o checkpointRestoreOptions
	return &cobra.Command{
		Use:   "restore REPO BRANCH NAME",
		Short: "Commit the checkpoint's tree on the branch, keeping history",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch, o.name = args[0], args[1], args[2]
			return runCheckpointRestore(cmd.Context(), o)
		},
	}
}

// runCheckpointRestore commits the checkpoint's tree on the branch and
// prints the answer as JSON.
func runCheckpointRestore(ctx context.Context, o checkpointRestoreOptions) error {
	return jsonCall(ctx, apiv1.CheckpointRestoreRequest{Repo: o.repo, Branch: o.branch, Name: o.name}, &apiv1.RestoreResponse{})
}
