package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// exit codes: 0 success, 1 failure, 2 usage, 3 waiting for a person (a
// proposal at a gate).
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	exitWaiting = 3
)

// errWaiting ends a command whose work waits for a person; it exits 3
// and prints nothing more.
var errWaiting = errors.New("waiting for a person")

// usageError marks errors caused by how the command was called.
type usageError struct{ error }

// usagef is a usageError with a formatted message.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// newRootCmd builds the nas command and every subcommand.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "nas",
		Short:         "Agent NAS: an S3 gateway with copy-on-write branches for runs",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addClientFlags(root)
	root.AddCommand(newServeCmd(), newRepoCmd(), newBranchCmd(), newCommitCmd(), newLogCmd(),
		newDiffCmd(), newChangesCmd(), newFsckCmd(), newGCCmd(), newLeaseCmd(), newShareCmd(), newRoleCmd(),
		newExplainCmd(), newAuditCmd(), newVerifyCmd(), newSourceCmd(), newMountCmd(), newUnmountCmd(),
		newMergeCmd(), newRevertCmd(), newCherryPickCmd(), newProposeCmd(), newGateCmd(), newHookCmd(), newCheckCmd(), newPolicyCmd(), newCheckpointCmd(), newTrashCmd(),
		newConformanceCmd(), newExportCmd(), newImportCmd(), newBenchMovedCmd(), newVersionCmd(),
		newAliasCmd(), newLsCmd(), newCpCmd(), newCatCmd(), newRmCmd(), newMirrorCmd(), newDuCmd(),
		newReadCmd(), newEvidenceCmd(), newMCPCmd(), newSearchCmd(), newIndexCmd(),
		newRememberCmd(), newRecallCmd(), newLabelCmd(), newHandoffCmd(), newMemoryCmd(), newForgetCmd(), newHoldCmd())
	return root
}

// run runs nas with args and returns its exit code; with --json a
// failed call also prints its error document.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errWaiting) {
		return exitWaiting
	}
	var ue usageError
	usage := errors.As(err, &ue) || isCobraUsage(err)
	if cf.json {
		printErrorDocument(err, usage)
	} else {
		fmt.Fprintln(os.Stderr, "nas:", err)
	}
	if usage {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises cobra's own argument errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// exactArgs is cobra.ExactArgs reporting a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %d argument(s), got %d\nusage: %s", cmd.CommandPath(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// optArg is the optional positional argument i, "" when absent.
func optArg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
