package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newCommitCmd() *cobra.Command {
	var msg string
	var allowEmpty bool
	cmd := &cobra.Command{
		Use:   "commit REPO BRANCH -m MESSAGE",
		Short: "Commit a branch's staged changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := apiv1.CommitCreateRequest{Repo: args[0], Branch: args[1], Message: msg, AllowEmpty: allowEmpty}
			var out apiv1.CommitResponse
			if err := doCall(cmd.Context(), req, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			fmt.Printf("committed %s on %s: %s\n", out.Commit.ID, args[1], out.Commit.Message)
			return nil
		},
	}
	cmd.Flags().StringVarP(&msg, "message", "m", "", "commit message")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "commit even when nothing is staged")
	return cmd
}
