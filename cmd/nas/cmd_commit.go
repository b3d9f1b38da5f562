package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type commitJSON struct {
	ID        string    `json:"id"`
	Parents   []string  `json:"parents"`
	Message   string    `json:"message"`
	Principal string    `json:"principal"`
	Time      time.Time `json:"time"`
}

func newCommitCmd() *cobra.Command {
	var msg string
	var allowEmpty bool
	cmd := &cobra.Command{
		Use:   "commit REPO BRANCH -m MESSAGE",
		Short: "Commit a branch's staged changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			err = c.call(cmd.Context(), "commit/create", map[string]any{"repo": args[0], "branch": args[1], "message": msg, "allow_empty": allowEmpty}, &raw)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(raw)
			}
			var out struct {
				Commit commitJSON `json:"commit"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			fmt.Printf("committed %s on %s: %s\n", out.Commit.ID, args[1], out.Commit.Message)
			return nil
		},
	}
	cmd.Flags().StringVarP(&msg, "message", "m", "", "commit message")
	cmd.Flags().BoolVar(&allowEmpty, "allow-empty", false, "commit even when nothing is staged")
	return cmd
}

func newLogCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "log REPO BRANCH_OR_COMMIT",
		Short: "Show the commits of a branch, newest first",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			cursor, n := "", 0
			var all []commitJSON
			for {
				var out struct {
					Commits    []commitJSON `json:"commits"`
					NextCursor string       `json:"next_cursor"`
				}
				if err := c.call(cmd.Context(), "commit/log", map[string]any{"repo": args[0], "ref": args[1], "cursor": cursor}, &out); err != nil {
					return err
				}
				for _, cm := range out.Commits {
					if limit > 0 && n >= limit {
						out.NextCursor = ""
						break
					}
					n++
					if cf.json {
						all = append(all, cm)
						continue
					}
					fmt.Printf("commit %s\n", cm.ID)
					if cm.Principal != "" {
						fmt.Printf("Author: %s\n", cm.Principal)
					}
					fmt.Printf("Date:   %s\n\n    %s\n\n", cm.Time.Local().Format(time.RFC1123Z), cm.Message)
				}
				if out.NextCursor == "" {
					break
				}
				cursor = out.NextCursor
			}
			if cf.json {
				return printJSON(map[string]any{"commits": all})
			}
			return nil
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 0, "show at most this many commits")
	return cmd
}
