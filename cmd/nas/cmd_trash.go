package main

import (
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newTrashCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trash", Short: "What merges deleted from protected branches, kept 7 days (owner only)"}
	list := &cobra.Command{Use: "list REPO [PREFIX]", Short: "List trashed objects", Args: cobra.RangeArgs(1, 2), RunE: func(cmd *cobra.Command, a []string) error {
		req := apiv1.TrashListRequest{Repo: a[0]}
		if len(a) == 2 {
			req.Prefix = a[1]
		}
		return jsonCall(cmd.Context(), req, &apiv1.TrashListResponse{})
	}}
	restore := &cobra.Command{Use: "restore REPO PATH", Short: "Put a trashed object back with a commit", Args: exactArgs(2), RunE: func(cmd *cobra.Command, a []string) error {
		return jsonCall(cmd.Context(), apiv1.TrashRestoreRequest{Repo: a[0], Path: a[1]}, &apiv1.RestoreResponse{})
	}}
	cmd.AddCommand(list, restore)
	return cmd
}
