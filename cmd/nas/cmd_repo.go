package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

func newRepoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "repo", Short: "Create, list and delete repositories (S3 buckets)"}
	var unprotected bool
	create := &cobra.Command{
		Use:   "create REPO",
		Short: "Create a repository whose main branch is protected (changes only through merges)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			protected := !unprotected
			var out json.RawMessage
			if err := c.call(cmd.Context(), "repo/create", map[string]any{"repo": args[0], "protected": protected}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(out)
			}
			state := "protected"
			if unprotected {
				state = "unprotected"
			}
			fmt.Printf("created repository %s (main is %s)\n", args[0], state)
			return nil
		},
	}
	create.Flags().BoolVar(&unprotected, "unprotected", false, "leave main writable")
	list := &cobra.Command{
		Use:   "list",
		Short: "List repositories",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var out struct {
				Repos []struct {
					Name    string `json:"name"`
					Created string `json:"created"`
				} `json:"repos"`
			}
			var raw json.RawMessage
			if err := c.call(cmd.Context(), "repo/list", map[string]any{}, &raw); err != nil {
				return err
			}
			if cf.json {
				return printJSON(raw)
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			for _, r := range out.Repos {
				fmt.Printf("%s\t%s\n", r.Name, r.Created)
			}
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete REPO",
		Short: "Delete a repository whose branches hold no objects",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "repo/delete", map[string]any{"repo": args[0]}, "deleted repository "+args[0])
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
}

// simpleCall runs one call and prints msg (or the JSON answer).
func simpleCall(cmd *cobra.Command, op string, args map[string]any, msg string) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	var out json.RawMessage
	if err := c.call(cmd.Context(), op, args, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	fmt.Println(msg)
	return nil
}
