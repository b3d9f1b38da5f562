package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// logOptions are the arguments and flags of `nas log`.
type logOptions struct {
	repo, ref string
	limit     int
}

// newLogCmd builds `nas log`.
func newLogCmd() *cobra.Command {
	var o logOptions
	cmd := &cobra.Command{
		Use:   "log REPO BRANCH_OR_COMMIT",
		Short: "Show the commits of a branch, newest first",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.ref = args[0], args[1]
			return runLog(cmd.Context(), o)
		},
	}
	cmd.Flags().IntVarP(&o.limit, "limit", "n", 0, "show at most this many commits")
	return cmd
}

// runLog prints the history of a branch or commit, newest first, the way
// git log does.
func runLog(ctx context.Context, o logOptions) error {
	out, err := commitLog(ctx, apiv1.CommitLogRequest{Repo: o.repo, Ref: o.ref}, o.limit)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, cm := range out.Commits {
		fmt.Printf("commit %s\n", cm.ID)
		if cm.Principal != "" {
			fmt.Printf("Author: %s\n", cm.Principal)
		}
		fmt.Printf("Date:   %s\n\n    %s\n\n", cm.Time.Local().Format(time.RFC1123Z), cm.Message)
	}
	return nil
}

// commitLog pages through commit/log until limit commits (0: all). Its
// next_cursor is the commit to continue from when limit cut the history
// short.
func commitLog(ctx context.Context, req apiv1.CommitLogRequest, limit int) (apiv1.CommitLogResponse, error) {
	all := apiv1.CommitLogResponse{Commits: []apiv1.Commit{}}
	c, err := newClient()
	if err != nil {
		return all, err
	}
	for {
		if limit > 0 {
			req.Limit = min(limit-len(all.Commits), apiv1.MaxLimit)
		}
		var page apiv1.CommitLogResponse
		if err := c.do(ctx, req, &page); err != nil {
			return all, err
		}
		all.Commits = append(all.Commits, page.Commits...)
		all.NextCursor = page.NextCursor
		if limit > 0 && len(all.Commits) > limit { // more than asked for
			all.NextCursor = all.Commits[limit].ID
			all.Commits = all.Commits[:limit]
		}
		if all.NextCursor == "" || limit > 0 && len(all.Commits) == limit {
			return all, nil
		}
		req.Cursor = all.NextCursor
	}
}
