package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	request        bool
	reason         string
}

// newSourcePushCmd builds `nas source push`.
func newSourcePushCmd() *cobra.Command {
	var o sourcePushOptions
	cmd := &cobra.Command{
		Use:   "push REPO SOURCE_ID --from BRANCH [--paths GLOB]... [--dry-run] | push REPO SOURCE_ID|PREFIX --request --reason WHY [--paths GLOB]...",
		Short: "Write a branch's committed changes under a source's prefix back to its S3 bucket",
		Long: "Push compares BRANCH's committed state under the attachment's prefix with the attachment's own branch and " +
			"writes each difference to the remote: a PUT If-Match the pinned ETag (If-None-Match: * for a new key), or a " +
			"DELETE of the pinned version. An object that changed at the remote since it was pinned is a conflict: listed, " +
			"never overwritten. What was written is pinned again on the attachment's branch in one commit. Sensitive files " +
			"are never pushed. Owner only, recorded in the flight recorder, never automatic. Exit 1 when a key conflicted or failed.\n\n" +
			"A run asks instead (--request, with its lease's credentials): the changes of its own branch that it may write wait at a " +
			"gate whose card lists them (op source.push, egress); 'nas gate approve' by the owner writes exactly that plan, and a " +
			"plan that changed meanwhile voids the approval. The source is named by its ID or by the prefix it is attached at.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.id = args[0], args[1]
			return runSourcePush(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "", "the branch whose changes are written back (required; not the attachment's own)")
	cmd.Flags().StringArrayVar(&o.paths, "paths", nil, "only repository keys matching this glob (repeatable)")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "list what would be written, write nothing")
	cmd.Flags().BoolVar(&o.request, "request", false, "a run's request for the push, at a gate (with a lease's credentials)")
	cmd.Flags().StringVar(&o.reason, "reason", "", "why the run asks (required with --request; shown on the card)")
	return cmd
}

// runSourcePushRequest puts a run's request to push at a gate and prints
// the gate.
func runSourcePushRequest(ctx context.Context, o sourcePushOptions) error {
	if o.reason == "" || o.from != "" || o.dryRun {
		return usagef("nas source push --request takes --reason WHY, and neither --from (the lease's branch is pushed) nor --dry-run")
	}
	req := apiv1.SourcePushAskRequest{Repo: o.repo, Paths: o.paths, Reason: o.reason}
	if strings.HasPrefix(o.id, "src_") {
		req.ID = o.id
	} else {
		req.Prefix = o.id
	}
	var out apiv1.GateResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("%s · %s · %d change(s) wait for the owner (nas gate show %s)\n", out.Gate.ID, out.Gate.Status,
		out.Gate.Card.Action.FilesChanged, out.Gate.ID)
	return nil
}

// runSourcePush pushes and prints one line a key.
func runSourcePush(ctx context.Context, o sourcePushOptions) error {
	if o.request {
		return runSourcePushRequest(ctx, o)
	}
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
