package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newGateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "gate", Short: "Decide merges waiting for a person (owner only)"}
	var status string
	list := &cobra.Command{Use: "list", Short: "List gates, newest first", Args: exactArgs(0), RunE: func(cmd *cobra.Command, _ []string) error {
		var out apiv1.GateListResponse
		if err := doCall(cmd.Context(), apiv1.GateListRequest{Status: status}, &out); err != nil {
			return err
		}
		if cf.json {
			return printJSON(&out)
		}
		for _, g := range out.Gates {
			a := g.Card.Action
			fmt.Printf("%s\t%s\t%s: %s -> %s, %d change(s)\t%s\n", g.ID, g.Status, g.Repo, a.From, a.Into, a.FilesChanged, g.Card.Why)
		}
		return nil
	}}
	list.Flags().StringVar(&status, "status", "", "only gates in this state (pending, approved, denied, expired, void)")
	show := &cobra.Command{Use: "show GATE_ID", Short: "Print the Gate Card: the gateway's diff, its digest, the read manifest (--json: the whole gate)", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out apiv1.GateResponse
			if err := doCall(cmd.Context(), apiv1.GateGetRequest{GateID: args[0]}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			return printJSON(&out.Gate.Card)
		}}
	approve := newGateDecideCmd("approve", func(d apiv1.GateDecision) apiv1.Request { return apiv1.GateApproveRequest(d) })
	deny := newGateDecideCmd("deny", func(d apiv1.GateDecision) apiv1.Request { return apiv1.GateDenyRequest(d) })
	stats := &cobra.Command{Use: "stats", Short: "Approval rate and time to decide", Args: exactArgs(0), RunE: func(cmd *cobra.Command, _ []string) error {
		return jsonCall(cmd.Context(), apiv1.GateStatsRequest{}, &apiv1.GateStatsResponse{})
	}}
	cmd.AddCommand(list, show, approve, deny, stats)
	return cmd
}

// newGateDecideCmd builds `nas gate approve` or `nas gate deny`; req makes
// the decision's request.
func newGateDecideCmd(verb string, req func(apiv1.GateDecision) apiv1.Request) *cobra.Command {
	var reason string
	d := &cobra.Command{Use: verb + " GATE_ID", Short: strings.ToUpper(verb[:1]) + verb[1:] + " a gate", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out apiv1.GateResponse
			if err := doCall(cmd.Context(), req(apiv1.GateDecision{GateID: args[0], Reason: reason}), &out); err != nil {
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
		}}
	d.Flags().StringVar(&reason, "reason", "", "why (recorded)")
	return d
}
