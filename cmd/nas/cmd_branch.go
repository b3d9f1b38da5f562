package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type branchJSON struct {
	Name      string    `json:"name"`
	Head      string    `json:"head"`
	Base      string    `json:"base"`
	Protected bool      `json:"protected"`
	Created   time.Time `json:"created"`
}

func newBranchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "branch", Short: "Fork, list, delete and protect branches"}
	var from string
	create := &cobra.Command{
		Use:   "create REPO NAME [--from BRANCH_OR_COMMIT]",
		Short: "Fork a branch in constant time from a branch's head commit or a commit ID",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.call(cmd.Context(), "branch/create", map[string]any{"repo": args[0], "name": args[1], "from": from}, &raw); err != nil {
				return err
			}
			if cf.json {
				return printJSON(raw)
			}
			var out struct {
				Branch branchJSON `json:"branch"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			fmt.Printf("created branch %s at %s\n", out.Branch.Name, out.Branch.Head)
			return nil
		},
	}
	create.Flags().StringVar(&from, "from", "", "branch or commit to fork from (default: the repository's default branch)")
	list := &cobra.Command{
		Use:   "list REPO",
		Short: "List branches",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			cursor := ""
			var all []json.RawMessage
			for {
				var out struct {
					Branches   []json.RawMessage `json:"branches"`
					NextCursor string            `json:"next_cursor"`
				}
				if err := c.call(cmd.Context(), "branch/list", map[string]any{"repo": args[0], "cursor": cursor}, &out); err != nil {
					return err
				}
				for _, b := range out.Branches {
					if cf.json {
						all = append(all, b)
						continue
					}
					var bj branchJSON
					if err := json.Unmarshal(b, &bj); err != nil {
						return err
					}
					mark := ""
					if bj.Protected {
						mark = "\tprotected"
					}
					fmt.Printf("%s\t%s%s\n", bj.Name, short(bj.Head), mark)
				}
				if out.NextCursor == "" {
					break
				}
				cursor = out.NextCursor
			}
			if cf.json {
				return printJSON(map[string]any{"branches": all})
			}
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete REPO NAME",
		Short: "Delete a branch and its uncommitted changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "branch/delete", map[string]any{"repo": args[0], "name": args[1]}, "deleted branch "+args[1])
		},
	}
	protect := &cobra.Command{
		Use:   "protect REPO NAME",
		Short: "Refuse every direct write to a branch (it then changes only through merges)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "branch/protect", map[string]any{"repo": args[0], "name": args[1]}, "protected branch "+args[1])
		},
	}
	unprotect := &cobra.Command{
		Use:   "unprotect REPO NAME",
		Short: "Allow direct writes to a branch again",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "branch/unprotect", map[string]any{"repo": args[0], "name": args[1]}, "unprotected branch "+args[1])
		},
	}
	cmd.AddCommand(create, list, del, protect, unprotect)
	return cmd
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
