package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newImportCmd() *cobra.Command {
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
			return runImport(cmd.Context(), args[0], args[1])
		},
	}
}

func runImport(ctx context.Context, src, repo string) error {
	c, err := exportClient()
	if err != nil {
		return err
	}
	start := time.Now()
	rep, err := c.Import(ctx, src, repo)
	if err != nil {
		return fmt.Errorf("import %s: %w", src, err)
	}
	if cf.json {
		return printJSON(&transferJSON{Repo: repo, Src: src, Report: rep, Seconds: time.Since(start).Seconds()})
	}
	fmt.Printf("imported %s as %s: %d commits, %d branches, %d changed keys, %d bytes in %s\n",
		src, repo, rep.Commits, rep.Branches, rep.Entries, rep.Bytes, time.Since(start).Round(time.Millisecond))
	return nil
}
