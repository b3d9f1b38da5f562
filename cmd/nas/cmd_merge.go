package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newMergeCmd() *cobra.Command {
	var req apiv1.MergeCreateRequest
	cmd := &cobra.Command{
		Use:   "merge REPO FROM --into TO [--ours PATTERN] [--theirs PATTERN]",
		Short: "Three-way merge of a branch or commit into a branch (the owner's direct merge)",
		Long: "A conflict (both sides changed a key differently, or one changed what the other deleted)\n" +
			"stops the merge and changes nothing; every conflicting key is listed with both sides' ETags.\n" +
			"--ours/--theirs resolve conflicts on keys matching a glob.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Into == "" {
				return usagef("--into is required")
			}
			req.Repo, req.From = args[0], args[1]
			var out apiv1.MergeCreateResponse
			err := doCall(cmd.Context(), req, &out)
			if errorCode(err) == apiv1.CodeMergeConflict {
				fmt.Fprintln(os.Stderr, "merge conflict; nothing was changed")
			}
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			r := out.Result
			switch {
			case r.UpToDate:
				fmt.Println("already up to date")
			case req.DryRun:
				fmt.Printf("would change %d key(s)\n", r.Applied)
			default:
				fmt.Printf("merged %s into %s: %d key(s) changed, commit %s\n", req.From, req.Into, r.Applied, r.Commit)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Into, "into", "", "target branch")
	cmd.Flags().StringVarP(&req.Message, "message", "m", "", "merge commit message")
	cmd.Flags().StringSliceVar(&req.Ours, "ours", nil, "resolve conflicts on keys matching this glob to the target's side")
	cmd.Flags().StringSliceVar(&req.Theirs, "theirs", nil, "resolve conflicts on keys matching this glob to the source's side")
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "compute the merge without committing")
	return cmd
}
