package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// errNotVerified ends `nas evidence verify` when the pointer does not
// hold (exit 1).
var errNotVerified = errors.New("the pointer does not verify")

// newEvidenceCmd builds `nas evidence`.
func newEvidenceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Dereference and verify evidence pointers (nas://REPO/PATH@COMMIT#Lx-Ly)",
	}
	cmd.AddCommand(newDereferenceCmd(), newEvidenceVerifyCmd())
	return cmd
}

// newDereferenceCmd builds `nas evidence dereference`.
func newDereferenceCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dereference POINTER",
		Short: "Print the exact lines a pointer names, as of its commit",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDereference(cmd.Context(), args[0])
		},
	}
}

// runDereference prints the lines a pointer names.
func runDereference(ctx context.Context, pointer string) error {
	var out apiv1.FileDereferenceResponse
	if err := doCall(ctx, apiv1.FileDereferenceRequest{Pointer: pointer}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	fmt.Print(out.Content)
	return nil
}

// newEvidenceVerifyCmd builds `nas evidence verify`.
func newEvidenceVerifyCmd() *cobra.Command {
	var sum string
	cmd := &cobra.Command{
		Use:   "verify POINTER --sha256 HASH",
		Short: "Check that a pointer's lines exist at its commit and hash to HASH (exit 1 if not)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sum == "" {
				return usagef("verify needs --sha256 HASH (the hash a read gave with the pointer)")
			}
			return runEvidenceVerify(cmd.Context(), args[0], sum)
		},
	}
	cmd.Flags().StringVar(&sum, "sha256", "", "the SHA-256 (hex) of the lines")
	return cmd
}

// runEvidenceVerify checks a pointer and its hash.
func runEvidenceVerify(ctx context.Context, pointer, sum string) error {
	var out apiv1.FileVerifyResponse
	if err := doCall(ctx, apiv1.FileVerifyRequest{Pointer: pointer, SHA256: sum}, &out); err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(out); err != nil {
			return err
		}
	} else if out.Valid {
		fmt.Println("valid")
	}
	if !out.Valid {
		return fmt.Errorf("%w: %s", errNotVerified, out.Reason)
	}
	return nil
}
