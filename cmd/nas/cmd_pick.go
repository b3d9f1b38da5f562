package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// pickOptions are the arguments and flags of `nas revert` and `nas
// cherry-pick`.
type pickOptions struct {
	repo, branch, commit, message string
	revert                        bool
}

// newRevertCmd builds `nas revert`.
func newRevertCmd() *cobra.Command {
	return newPickCmd(true, "revert REPO BRANCH COMMIT [-m MESSAGE]",
		"Make a commit on a branch that undoes a commit's changes (against its first parent)")
}

// newCherryPickCmd builds `nas cherry-pick`.
func newCherryPickCmd() *cobra.Command {
	return newPickCmd(false, "cherry-pick REPO BRANCH COMMIT [-m MESSAGE]",
		"Make a commit on a branch that applies a commit's changes (against its first parent)")
}

// newPickCmd builds revert (revert true) or cherry-pick.
func newPickCmd(revert bool, use, short string) *cobra.Command {
	o := pickOptions{revert: revert}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\nA three-way merge, as `nas merge` does: a key the branch changed differently since is a\n" +
			"conflict, listed with both sides' ETags, and nothing changes. Like a commit it is refused on a\n" +
			"protected branch and when the branch has uncommitted changes (commit them first).",
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch, o.commit = args[0], args[1], args[2]
			return runPick(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.message, "message", "m", "", "commit message (default: names the commit)")
	return cmd
}

// runPick reverts or cherry-picks and says what it committed.
func runPick(ctx context.Context, o pickOptions) error {
	p := apiv1.PickRequest{Repo: o.repo, Branch: o.branch, Commit: o.commit, Message: o.message}
	var req apiv1.Request = apiv1.CommitCherryPickRequest(p)
	what, done := "cherry-pick", "applied"
	if o.revert {
		req, what, done = apiv1.CommitRevertRequest(p), "revert", "reverted"
	}
	var out apiv1.PickResponse
	err := doCall(ctx, req, &out)
	if errorCode(err) == apiv1.CodeMergeConflict && !cf.json {
		printConflicts(err, what, "commit a resolution on the branch first")
	}
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("%s %s on %s: %d key(s) changed, commit %s\n", done, o.commit, o.branch, out.Result.Applied, out.Result.Commit)
	return nil
}
