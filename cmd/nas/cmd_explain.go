package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// explainOptions are the arguments of `nas explain`.
type explainOptions struct{ repo, commit string }

// newExplainCmd builds `nas explain`.
func newExplainCmd() *cobra.Command {
	var o explainOptions
	return &cobra.Command{
		Use:   "explain REPO COMMIT",
		Short: "Show the run, lease, events and read manifest behind a commit",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.commit = args[0], args[1]
			return runExplain(cmd.Context(), o)
		},
	}
}

// runExplain prints the flight recorder's account of the commit as JSON.
func runExplain(ctx context.Context, o explainOptions) error {
	return jsonCall(ctx, apiv1.RecordExplainRequest{Repo: o.repo, Commit: o.commit}, &apiv1.RecordExplainResponse{})
}
