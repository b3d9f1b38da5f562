package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// changesOptions are the arguments of `nas changes`: REPO BRANCH, or the
// DIR of a mount.
type changesOptions struct{ target []string }

// newChangesCmd builds `nas changes`.
func newChangesCmd() *cobra.Command {
	var o changesOptions
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
			o.target = args
			return runChanges(cmd.Context(), o)
		},
	}
}

// runChanges prints what the branch changed since its fork point; a mount
// answers that itself.
func runChanges(ctx context.Context, o changesOptions) error {
	if len(o.target) == 1 {
		dir := o.target[0]
		if ok, err := mountChanges(dir); ok {
			return err
		}
		return usagef("%s is neither a mount nor REPO BRANCH", dir)
	}
	repo, branch := o.target[0], o.target[1]
	return streamChanges(ctx, func(cursor string) apiv1.Request {
		return apiv1.ChangesListRequest{Repo: repo, Branch: branch, Page: apiv1.Page{Cursor: cursor}}
	})
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
