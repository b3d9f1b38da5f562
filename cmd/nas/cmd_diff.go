package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// streamChanges pages through a changes-style call (page builds the
// request of the page at cursor) and prints each change as it arrives:
// "A key", or with --json one apiv1.Change per line.
func streamChanges(ctx context.Context, page func(cursor string) apiv1.Request) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	cursor := ""
	for {
		var out apiv1.ChangesResponse
		if err := c.do(ctx, page(cursor), &out); err != nil {
			return err
		}
		for _, ch := range out.Changes {
			if cf.json {
				if err := enc.Encode(ch); err != nil {
					return err
				}
				continue
			}
			fmt.Printf("%s %s\n", ch.Kind, ch.Key)
		}
		if out.NextCursor == "" {
			return nil
		}
		cursor = out.NextCursor
	}
}

// diffOptions are the arguments of `nas diff`.
type diffOptions struct{ repo, from, to string }

// newDiffCmd builds `nas diff`.
func newDiffCmd() *cobra.Command {
	var o diffOptions
	return &cobra.Command{
		Use:   "diff REPO FROM TO",
		Short: "List keys added (A), modified (M) and deleted (D) between two branches or commits",
		Long:  "diff compares committed states; uncommitted changes of a branch are shown by `nas changes`.",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.from, o.to = args[0], args[1], args[2]
			return runDiff(cmd.Context(), o)
		},
	}
}

// runDiff prints the keys that differ between two committed states.
func runDiff(ctx context.Context, o diffOptions) error {
	return streamChanges(ctx, func(cursor string) apiv1.Request {
		return apiv1.DiffListRequest{Repo: o.repo, From: o.from, To: o.to, Page: apiv1.Page{Cursor: cursor}}
	})
}
