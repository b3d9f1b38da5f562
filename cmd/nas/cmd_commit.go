package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// commitOptions are the arguments and flags of `nas commit`.
type commitOptions struct {
	repo, branch, message string
	allowEmpty            bool
}

// newCommitCmd builds `nas commit`.
func newCommitCmd() *cobra.Command {
	var o commitOptions
	cmd := &cobra.Command{
		Use:   "commit REPO BRANCH -m MESSAGE",
		Short: "Commit a branch's staged changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch = args[0], args[1]
			return runCommit(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.message, "message", "m", "", "commit message")
	cmd.Flags().BoolVar(&o.allowEmpty, "allow-empty", false, "commit even when nothing is staged")
	return cmd
}

// runCommit commits the branch's staged changes.
func runCommit(ctx context.Context, o commitOptions) error {
	req := apiv1.CommitCreateRequest{Repo: o.repo, Branch: o.branch, Message: o.message, AllowEmpty: o.allowEmpty}
	var out apiv1.CommitResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("committed %s on %s: %s\n", out.Commit.ID, o.branch, out.Commit.Message)
	return nil
}
