package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// errPushIncomplete ends a push in which a key conflicted or failed
// (exit 1).
var errPushIncomplete = errors.New("some changes were not written back (conflicts or failures above)")

// sourcePushOptions are the arguments and flags of `nas source push`.
type sourcePushOptions struct {
	repo, id, from string
	paths          []string
	dryRun         bool
}

// newSourcePushCmd builds `nas source push`.
func newSourcePushCmd() *cobra.Command {
	var o sourcePushOptions
	cmd := &cobra.Command{
		Use:   "push REPO SOURCE_ID --from BRANCH [--paths GLOB]... [--dry-run]",
		Short: "Write a branch's committed changes under a source's prefix back to its S3 bucket",
		Long: "Push compares BRANCH's committed state under the attachment's prefix with the attachment's own branch and " +
			"writes each difference to the remote: a PUT If-Match the pinned ETag (If-None-Match: * for a new key), or a " +
			"DELETE of the pinned version. An object that changed at the remote since it was pinned is a conflict: listed, " +
			"never overwritten. What was written is pinned again on the attachment's branch in one commit. Sensitive files " +
			"are never pushed. Owner only, recorded in the flight recorder, never automatic. Exit 1 when a key conflicted or failed.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			return runSourcePush(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "", "the branch whose changes are written back (required; not the attachment's own)")
	cmd.Flags().StringArrayVar(&o.paths, "paths", nil, "only repository keys matching this glob (repeatable)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "list what would be written, write nothing")
	return cmd
}

// runSourcePush pushes and prints one line a key.
func runSourcePush(ctx context.Context, o sourcePushOptions) error {
	if o.from == "" {
		return usagef("nas source push needs --from BRANCH")
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	if err := checkSourceRepo(ctx, c, o.repo, o.id); err != nil {
		return err
	}
	var out apiv1.SourcePushResponse
	if err := c.do(ctx, apiv1.SourcePushRequest{ID: o.id, From: o.from, Paths: o.paths, DryRun: o.dryRun}, &out); err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(&out); err != nil {
			return err
		}
	} else {
		for _, a := range out.Actions {
			line := fmt.Sprintf("%-11s %-6s %s", a.Result, a.Op, a.Key)
			if a.Reason != "" {
				line += "  (" + a.Reason + ")"
			}
			fmt.Println(line)
		}
		fmt.Printf("%d written, %d conflicts", out.Written, out.Conflicts)
		if out.Commit != "" {
			fmt.Printf("; pinned again in %s", out.Commit)
		}
		fmt.Println()
	}
	for _, a := range out.Actions {
		if a.Result == "conflict" || a.Result == "failed" {
			return errPushIncomplete
		}
	}
	return nil
}
