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

func newDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff REPO FROM TO",
		Short: "List keys added (A), modified (M) and deleted (D) between two branches or commits",
		Long:  "diff compares committed states; uncommitted changes of a branch are shown by `nas changes`.",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return streamChanges(cmd.Context(), func(cursor string) apiv1.Request {
				return apiv1.DiffListRequest{Repo: args[0], From: args[1], To: args[2], Page: apiv1.Page{Cursor: cursor}}
			})
		},
	}
}
