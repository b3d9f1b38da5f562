package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

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
			return streamChanges(cmd.Context(), func(cursor string) apiv1.Request {
				return apiv1.ChangesListRequest{Repo: args[0], Branch: args[1], Page: apiv1.Page{Cursor: cursor}}
			})
		},
	}
}

// mountChanges prints DIR/.nas/changes when `nas changes` is given a
// mount point.
func mountChanges(dir string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, ".nas", "changes"))
	if err != nil {
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			return true, fmt.Errorf("%s is not a nas mount: %w", dir, err)
		}
		return false, nil
	}
	_, err = os.Stdout.Write(b)
	return true, err
}
