package main

import (
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newExplainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain REPO COMMIT",
		Short: "Show the run, lease, events and read manifest behind a commit",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jsonCall(cmd.Context(), apiv1.RecordExplainRequest{Repo: args[0], Commit: args[1]}, &apiv1.RecordExplainResponse{})
		},
	}
}
