package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

type changeJSON struct {
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	OldETag string `json:"old_etag,omitempty"`
	NewETag string `json:"new_etag,omitempty"`
	OldSize *int64 `json:"old_size,omitempty"`
	NewSize *int64 `json:"new_size,omitempty"`
}

// streamChanges pages through a changes-style call and prints each change
// as it arrives: "A key", or one JSON object per line with --json.
func streamChanges(ctx context.Context, op string, args map[string]any) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for {
		var out struct {
			Changes    []changeJSON `json:"changes"`
			NextCursor string       `json:"next_cursor"`
		}
		if err := c.call(ctx, op, args, &out); err != nil {
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
		args["cursor"] = out.NextCursor
	}
}

func newDiffCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "diff REPO FROM TO",
		Short: "List keys added (A), modified (M) and deleted (D) between two branches or commits",
		Long:  "diff compares committed states; uncommitted changes of a branch are shown by `nas changes`.",
		Args:  exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return streamChanges(cmd.Context(), "diff/list", map[string]any{"repo": args[0], "from": args[1], "to": args[2]})
		},
	}
}

func newChangesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "changes REPO BRANCH | changes DIR",
		Short: "List what a branch (or the branch mounted at DIR) changed since its fork point, staged changes included",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 && len(args) != 2 {
				return usagef("%s takes REPO BRANCH, or the DIR of a mount\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if ok, err := mountChanges(args[0]); ok {
					return err
				}
				return usagef("%s is neither a mount nor REPO BRANCH", args[0])
			}
			return streamChanges(cmd.Context(), "changes/list", map[string]any{"repo": args[0], "branch": args[1]})
		},
	}
}
