package main

import (
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newCheckpointCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "checkpoint", Short: "Name a branch's state and restore it later (owner only)"}
	create := &cobra.Command{Use: "create REPO BRANCH NAME", Short: "Name the branch's head commit", Args: exactArgs(3), RunE: func(cmd *cobra.Command, a []string) error {
		req := apiv1.CheckpointCreateRequest{Repo: a[0], Branch: a[1], Name: a[2]}
		return simpleCall(cmd.Context(), req, &apiv1.CheckpointResponse{}, "checkpoint "+a[2]+" of "+a[1])
	}}
	list := &cobra.Command{Use: "list REPO [BRANCH]", Short: "List checkpoints", Args: cobra.RangeArgs(1, 2), RunE: func(cmd *cobra.Command, a []string) error {
		req := apiv1.CheckpointListRequest{Repo: a[0]}
		if len(a) == 2 {
			req.Branch = a[1]
		}
		return jsonCall(cmd.Context(), req, &apiv1.CheckpointListResponse{})
	}}
	restore := &cobra.Command{Use: "restore REPO BRANCH NAME", Short: "Commit the checkpoint's tree on the branch, keeping history", Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, a []string) error {
			return jsonCall(cmd.Context(), apiv1.CheckpointRestoreRequest{Repo: a[0], Branch: a[1], Name: a[2]}, &apiv1.RestoreResponse{})
		}}
	cmd.AddCommand(create, list, restore)
	return cmd
}
