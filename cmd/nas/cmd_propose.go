package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// proposeOptions are the arguments and flags of `nas propose`.
type proposeOptions struct {
	repo, branch, into, intent string
	checks                     []string
}

// newProposeCmd builds `nas propose`.
func newProposeCmd() *cobra.Command {
	var o proposeOptions
	cmd := &cobra.Command{
		Use:   "propose REPO BRANCH [--into main] [--intent TEXT] [--checks NAME,...]",
		Short: "Propose merging a run's branch: policy merges, refuses, or waits for a person at a gate",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch = args[0], args[1]
			return runPropose(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.into, "into", "", "target branch (default: the branch the run was forked from, else main)")
	cmd.Flags().StringVar(&o.intent, "intent", "", "why (shown on the Gate Card)")
	cmd.Flags().StringSliceVar(&o.checks, "checks", nil, "pre-merge checks to run on the proposal besides those the target requires (names of nas check add)")
	return cmd
}

// runPropose proposes the merge and says what policy made of it; a
// proposal waiting at a gate ends with errWaiting.
func runPropose(ctx context.Context, o proposeOptions) error {
	var out apiv1.ProposeCreateResponse
	if err := doCall(ctx, apiv1.ProposeCreateRequest{Repo: o.repo, Branch: o.branch, Into: o.into, Intent: o.intent, Checks: o.checks}, &out); err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(&out); err != nil {
			return err
		}
	} else if err := printProposal(&out.Proposal); err != nil {
		return err
	}
	if out.Proposal.Status == "pending" {
		return errWaiting
	}
	return nil
}

// printProposal says what became of a proposal of branch into into; a
// refusal or a conflict is an error.
func printProposal(p *apiv1.Proposal) error {
	branch, into := p.From, p.Into
	switch p.Status {
	case "pending":
		fmt.Printf("gate %s waiting for approval: merge %s into %s (%d change(s), rule %s)\n", p.GateID, branch, into, len(p.Changes), p.Rule)
		if len(p.Checks) > 0 {
			fmt.Printf("checks %s running (nas check results %s)\n", strings.Join(p.Checks, ","), p.ID)
		}
	case "merged":
		fmt.Printf("merged by policy (rule %s) · commit %s\n", p.Rule, p.Merge)
	case "refused":
		return fmt.Errorf("refused by policy (rule %s)", p.Rule)
	case "conflict":
		return fmt.Errorf("conflicts with %s: %v", into, p.Conflicts)
	case "up_to_date":
		fmt.Println("nothing to merge")
	default:
		fmt.Println(p.Status)
	}
	return nil
}
