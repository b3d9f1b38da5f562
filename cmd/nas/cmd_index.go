package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newIndexCmd builds `nas index`: the full-text index of a repository.
func newIndexCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "index", Short: "Rebuild, inspect or delete a repository's full-text index (owner only)"}
	for _, v := range []struct{ verb, short string }{
		{"rebuild", "Delete the index and build it anew at the branch's last commit"},
		{"status", "List the commits the index covers, with its recipe and inputs"},
		{"delete", "Delete the index; the next search builds it again"},
	} {
		cmd.AddCommand(newIndexVerbCmd(v.verb, v.short))
	}
	return cmd
}

// indexOptions are the arguments of `nas index VERB`.
type indexOptions struct{ verb, repo, branch string }

// newIndexVerbCmd builds `nas index VERB`.
func newIndexVerbCmd(verb, short string) *cobra.Command {
	o := indexOptions{verb: verb}
	cmd := &cobra.Command{
		Use:   verb + " REPO",
		Short: short,
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			return runIndex(cmd.Context(), o)
		},
	}
	if verb != "delete" {
		cmd.Flags().StringVar(&o.branch, "branch", "", "branch (default: the repository's default)")
	}
	return cmd
}

// runIndex runs one index verb and prints its answer.
func runIndex(ctx context.Context, o indexOptions) error {
	req := apiv1.IndexRequest{Repo: o.repo, Branch: o.branch}
	switch o.verb {
	case "delete":
		return simpleCall(ctx, apiv1.IndexDeleteRequest(req), &apiv1.DeletedResponse{}, "deleted the index of "+o.repo)
	case "rebuild":
		return printIndexes(ctx, apiv1.IndexRebuildRequest(req))
	}
	return printIndexes(ctx, apiv1.IndexStatusRequest(req))
}

// printIndexes calls req and prints the indexes it answers.
func printIndexes(ctx context.Context, req apiv1.Request) error {
	var out apiv1.IndexResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	if len(out.Indexes) == 0 {
		fmt.Println("no index")
	}
	for _, i := range out.Indexes {
		fmt.Printf("%s@%s: %d file(s), %d skipped, %d bytes; %s %s %v; built %s in %.2fs\n", i.Repo, i.Commit, i.Files, i.Skipped, i.Bytes,
			i.Recipe.Indexer, i.Recipe.Version, i.Recipe.Settings, i.BuiltAt, i.BuildSecs)
	}
	return nil
}
