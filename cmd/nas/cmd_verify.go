package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// verifyOptions are the options of `nas verify`: it has none.
type verifyOptions struct{}

// newVerifyCmd builds `nas verify`.
func newVerifyCmd() *cobra.Command {
	var o verifyOptions
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the flight recorder's hash chain and indexes; fails after any record was altered",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVerify(cmd.Context(), o)
		},
	}
}

// runVerify has the gateway verify its flight recorder and fails when it
// does not.
func runVerify(ctx context.Context, _ verifyOptions) error {
	var out apiv1.RecordVerifyResponse
	if err := doCall(ctx, apiv1.RecordVerifyRequest{}, &out); err != nil {
		return err
	}
	if err := printVerify(&out); err != nil {
		return err
	}
	if !out.OK {
		return fmt.Errorf("the flight recorder does not verify: %d problem(s)", len(out.Problems))
	}
	return nil
}

// printVerify prints what record/verify answered: the answer with --json,
// else the records checked and each problem (as JSON).
func printVerify(out *apiv1.RecordVerifyResponse) error {
	if cf.json {
		return printJSON(out)
	}
	fmt.Printf("%d records checked\n", out.Report.Records)
	for _, p := range out.Problems {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		fmt.Println("problem:", string(b))
	}
	return nil
}
