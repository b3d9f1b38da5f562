package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// mergeOptions are the arguments and flags of `nas merge`.
type mergeOptions struct {
	repo, from, into, message string
	ours, theirs              []string
	dryRun                    bool
}

// newMergeCmd builds `nas merge`.
func newMergeCmd() *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge REPO FROM --into TO [--ours PATTERN] [--theirs PATTERN]",
		Short: "Three-way merge of a branch or commit into a branch (the owner's direct merge)",
		Long: "A conflict (both sides changed a key differently, or one changed what the other deleted)\n" +
			"stops the merge and changes nothing; every conflicting key is listed with both sides' ETags.\n" +
			"--ours/--theirs resolve conflicts on keys matching a glob.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.from = args[0], args[1]
			return runMerge(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.into, "into", "", "target branch")
	cmd.Flags().StringVarP(&o.message, "message", "m", "", "merge commit message")
	cmd.Flags().StringSliceVar(&o.ours, "ours", nil, "resolve conflicts on keys matching this glob to the target's side")
	cmd.Flags().StringSliceVar(&o.theirs, "theirs", nil, "resolve conflicts on keys matching this glob to the source's side")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "compute the merge without committing")
	return cmd
}

// runMerge merges (or with --dry-run computes the merge) and says what
// changed; a conflict changes nothing.
func runMerge(ctx context.Context, o mergeOptions) error {
	if o.into == "" {
		return usagef("--into is required")
	}
	req := apiv1.MergeCreateRequest{Repo: o.repo, From: o.from, Into: o.into, Message: o.message,
		Ours: o.ours, Theirs: o.theirs, DryRun: o.dryRun}
	var out apiv1.MergeCreateResponse
	err := doCall(ctx, req, &out)
	if errorCode(err) == apiv1.CodeMergeConflict && !cf.json {
		printConflicts(err, "merge", "resolve with --ours GLOB or --theirs GLOB")
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
	case o.dryRun:
		fmt.Printf("would change %d key(s)\n", r.Applied)
	default:
		fmt.Printf("merged %s into %s: %d key(s) changed, commit %s\n", o.from, o.into, r.Applied, r.Commit)
	}
	return nil
}

// printConflicts lists, on stderr, every key of a conflict of what (a
// merge, a revert, a cherry-pick) with the ETag each side has ("-" when a
// side deleted or never had it), and then hint.
func printConflicts(err error, what, hint string) {
	fmt.Fprintf(os.Stderr, "%s conflict; nothing was changed\n", what)
	var e *apiError
	if !errors.As(err, &e) {
		return
	}
	var d struct {
		Result apiv1.MergeResult `json:"result"`
	}
	b, jerr := json.Marshal(e.doc.Details)
	if jerr != nil || json.Unmarshal(b, &d) != nil {
		return
	}
	etag := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	for _, c := range d.Result.Conflicts {
		fmt.Fprintf(os.Stderr, "  %s  ours %s  theirs %s  base %s\n", c.Key, etag(c.OursETag), etag(c.TheirsETag), etag(c.BaseETag))
	}
	fmt.Fprintf(os.Stderr, "%d conflicting key(s); %s\n", len(d.Result.Conflicts), hint)
}
