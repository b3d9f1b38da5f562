package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newGateCmd builds `nas gate`: the merges waiting for a person.
func newGateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "gate", Short: "Decide merges waiting for a person (owner only)"}
	approve := newGateDecideCmd("approve", func(d apiv1.GateDecision) apiv1.Request { return apiv1.GateApproveRequest(d) })
	deny := newGateDecideCmd("deny", func(d apiv1.GateDecision) apiv1.Request { return apiv1.GateDenyRequest(d) })
	cmd.AddCommand(newGateListCmd(), newGateShowCmd(), approve, deny, newGateStatsCmd())
	return cmd
}

// gateListOptions are the flags of `nas gate list`.
type gateListOptions struct{ status string }

// newGateListCmd builds `nas gate list`.
func newGateListCmd() *cobra.Command {
	var o gateListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List gates, newest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGateList(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.status, "status", "", "only gates in this state (pending, approved, denied, expired, void)")
	return cmd
}

// runGateList prints the gates, one a line: what would merge into what,
// and why.
func runGateList(ctx context.Context, o gateListOptions) error {
	var out apiv1.GateListResponse
	if err := doCall(ctx, apiv1.GateListRequest{Status: o.status}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, g := range out.Gates {
		a := g.Card.Action
		fmt.Printf("%s\t%s\t%s: %s -> %s, %d change(s)\t%s%s\n", g.ID, g.Status, g.Repo, a.From, a.Into, a.FilesChanged, g.Card.Why, checksLine(g.Card.Checks))
	}
	return nil
}

// checksLine sums up a card's checks: "\tchecks lint pass, unit pending".
func checksLine(rs []apiv1.CheckResult) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Name + " " + r.State
	}
	return "\tchecks " + strings.Join(parts, ", ")
}

// gateShowOptions are the argument of `nas gate show`.
type gateShowOptions struct{ id string }

// newGateShowCmd builds `nas gate show`.
func newGateShowCmd() *cobra.Command {
	var o gateShowOptions
	return &cobra.Command{
		Use:   "show GATE_ID",
		Short: "Print the Gate Card: the gateway's diff, its digest, the read manifest (--json: the whole gate)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.id = args[0]
			return runGateShow(cmd.Context(), o)
		},
	}
}

// runGateShow prints the gate's card as JSON (with --json, the whole
// gate).
func runGateShow(ctx context.Context, o gateShowOptions) error {
	var out apiv1.GateResponse
	if err := doCall(ctx, apiv1.GateGetRequest{GateID: o.id}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	return printJSON(&out.Gate.Card)
}

// gateDecideOptions are the argument and flags of `nas gate approve` and
// `nas gate deny`, and the request that makes the decision.
type gateDecideOptions struct {
	id, reason string
	request    func(apiv1.GateDecision) apiv1.Request
}

// newGateDecideCmd builds `nas gate approve` or `nas gate deny`; req makes
// the decision's request.
func newGateDecideCmd(verb string, req func(apiv1.GateDecision) apiv1.Request) *cobra.Command {
	o := gateDecideOptions{request: req}
	cmd := &cobra.Command{
		Use:   verb + " GATE_ID",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a gate",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.id = args[0]
			return runGateDecide(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.reason, "reason", "", "why (recorded)")
	return cmd
}

// runGateDecide decides the gate and prints its new state (and the merge
// commit of an approval).
func runGateDecide(ctx context.Context, o gateDecideOptions) error {
	var out apiv1.GateResponse
	if err := doCall(ctx, o.request(apiv1.GateDecision{GateID: o.id, Reason: o.reason}), &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	if out.Gate.Merge != "" {
		fmt.Printf("%s · merged · commit %s\n", out.Gate.Status, out.Gate.Merge)
	} else {
		fmt.Println(out.Gate.Status)
	}
	return nil
}

// gateStatsOptions are the options of `nas gate stats`: it has none.
type gateStatsOptions struct{}

// newGateStatsCmd builds `nas gate stats`.
func newGateStatsCmd() *cobra.Command {
	var o gateStatsOptions
	return &cobra.Command{
		Use:   "stats",
		Short: "Approval rate and time to decide",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGateStats(cmd.Context(), o)
		},
	}
}

// runGateStats prints the gates' statistics as JSON.
func runGateStats(ctx context.Context, _ gateStatsOptions) error {
	return jsonCall(ctx, apiv1.GateStatsRequest{}, &apiv1.GateStatsResponse{})
}
