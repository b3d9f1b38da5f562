package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// searchOptions are the arguments of `nas search`.
type searchOptions struct {
	repo, branch, query, prefix, commit string
	limit                               int
	quarantine                          bool
}

// newSearchCmd builds `nas search`.
func newSearchCmd() *cobra.Command {
	var o searchOptions
	cmd := &cobra.Command{
		Use:   "search REPO[@BRANCH] QUERY...",
		Short: "Full-text search of a branch's last commit: snippets with evidence pointers",
		Long: "search finds the files of the branch's last commit (or --commit) that match QUERY, best first,\n" +
			"and prints each as a snippet of a few lines with its evidence pointer and the lines' SHA-256.\n" +
			"Words match any of them; \"quoted phrases\" must match as written. A lease searches only\n" +
			"what it may read, and pays for each snippet from its read budget.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("%s takes REPO[@BRANCH] and a query\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch, _ = strings.Cut(args[0], "@")
			o.query = strings.Join(args[1:], " ")
			return runSearch(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.prefix, "prefix", "", "search only keys under this prefix")
	f.IntVar(&o.limit, "limit", 0, fmt.Sprintf("most hits (default %d, at most %d)", apiv1.DefaultSearchLimit, apiv1.MaxSearchLimit))
	f.StringVar(&o.commit, "commit", "", "search this commit (one the branch has seen) instead of the last")
	f.BoolVar(&o.quarantine, "include-quarantine", false, "also search quarantined notes (memory/quarantine/)")
	return cmd
}

// runSearch searches and prints the hits: snippets to standard output,
// the commit and index to standard error (all of it with --json).
func runSearch(ctx context.Context, o searchOptions) error {
	if o.repo == "" {
		return usagef("REPO is empty")
	}
	req := apiv1.SearchQueryRequest{Repo: o.repo, Branch: o.branch, Commit: o.commit, Query: o.query, Prefix: o.prefix,
		Limit: o.limit, IncludeQuarantine: o.quarantine}
	var out apiv1.SearchQueryResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	for _, h := range out.Hits {
		fmt.Printf("%s:%d-%d (score %.3f)\n", h.Path, h.Lines.StartLine, h.Lines.EndLine, h.Score)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(h.Snippet, "\n"), "\n") {
			fmt.Printf("    %s", strings.TrimSuffix(l, "\n")+"\n")
		}
		fmt.Printf("  evidence %s sha256 %s\n", h.Evidence.Pointer, h.Evidence.SHA256)
	}
	fmt.Fprintf(os.Stderr, "%d hit(s) at commit %s, %d tokens; index of %d file(s), %d skipped\n",
		len(out.Hits), out.Commit, out.Tokens, out.Index.Files, out.Index.Skipped)
	return nil
}
