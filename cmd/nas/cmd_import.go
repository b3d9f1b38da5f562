package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// importOptions are the arguments of `nas import`.
type importOptions struct{ src, repo string }

// newImportCmd builds `nas import`.
func newImportCmd() *cobra.Command {
	var o importOptions
	return &cobra.Command{
		Use:   "import SRC REPO",
		Short: "Create REPO from an export (nas export, or a clone of one)",
		Long: `Import reads the Git repository at SRC, written by nas export (or a git clone
--mirror / git gc of it), and creates REPO, which must not exist, with the
same tree roots, commit IDs, versions, branches and checkpoints. Everything
is verified against its hashes; a changed byte, metadata line or commit
message refuses the import and leaves no repository behind. Owner only.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.src, o.repo = args[0], args[1]
			return runImport(cmd.Context(), o)
		},
	}
}

// runImport creates the repository from the export and says what was
// imported.
func runImport(ctx context.Context, o importOptions) error {
	c, err := exportClient()
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := c.Import(ctx, o.src, o.repo)
	if err != nil {
		return fmt.Errorf("import %s: %w", o.src, err)
	}
	if cf.json {
		return printJSON(&transferJSON{Repo: o.repo, Src: o.src, Report: rep, Seconds: time.Since(start).Seconds()})
	}
	fmt.Printf("imported %s as %s: %d commits, %d branches, %d changed keys, %d bytes in %s\n",
		o.src, o.repo, rep.Commits, rep.Branches, rep.Entries, rep.Bytes, time.Since(start).Round(time.Millisecond))
	return nil
}
