package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newLabelCmd builds `nas label`: the owner's trust-label rules.
func newLabelCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "label", Short: "Set, list or remove a repository's trust-label rules (owner only)",
		Long: "label rules raise the trust labels of the keys a glob matches: origin (owner < agent < external)\n" +
			"and sensitivity (public < private < secret), and may mark them reviewed. A rule never lowers a\n" +
			"label. A lease never sees an entry above its sensitivity ceiling, and reading external content\n" +
			"taints its run's session (see `nas lease show`)."}
	list, rm := listRmCmds("List the rules, in the order they apply", "Remove the rule for GLOB", printRules,
		func(repo string) apiv1.Request { return apiv1.LabelListRequest{Repo: repo} },
		func(repo, glob string) apiv1.Request { return apiv1.LabelDeleteRequest{Repo: repo, Glob: glob} })
	cmd.AddCommand(newLabelSetCmd(), list, rm)
	return cmd
}

// newLabelSetCmd builds `nas label set`.
func newLabelSetCmd() *cobra.Command {
	var r apiv1.LabelSetRequest
	cmd := &cobra.Command{
		Use:   "set REPO GLOB [--origin O] [--sensitivity S] [--reviewed] [--retention R [--domain D]]",
		Short: "Add the rule for GLOB, or replace it",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Repo, r.Glob = args[0], args[1]
			return printRules(cmd.Context(), r)
		},
	}
	cmd.Flags().StringVar(&r.Origin, "origin", "", "owner, agent or external")
	cmd.Flags().StringVar(&r.Sensitivity, "sensitivity", "", "public, private or secret")
	cmd.Flags().BoolVar(&r.Reviewed, "reviewed", false, "mark the keys reviewed (declassifies external content)")
	cmd.Flags().StringVar(&r.Retention, "retention", "", "retention class of later writes: scratch or sensitive (sealed under a key domain that forgetting destroys)")
	cmd.Flags().StringVar(&r.Domain, "domain", "", "key domain of sensitive writes (default: the repository's)")
	return cmd
}

// listRmCmds builds the `list REPO` and `rm REPO GLOB` commands that
// label rules, handoffs and holds share: each sends its request and
// prints the answer with print.
func listRmCmds(listShort, rmShort string, print func(context.Context, apiv1.Request) error,
	list func(repo string) apiv1.Request, rm func(repo, glob string) apiv1.Request) (*cobra.Command, *cobra.Command) {
	l := &cobra.Command{Use: "list REPO", Short: listShort, Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return print(cmd.Context(), list(args[0])) }}
	r := &cobra.Command{Use: "rm REPO GLOB", Short: rmShort, Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return print(cmd.Context(), rm(args[0], args[1])) }}
	return l, r
}

// printRules calls req and prints the rules it answers, one a line.
func printRules(ctx context.Context, req apiv1.Request) error {
	var out apiv1.LabelRulesResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	if len(out.Rules) == 0 {
		fmt.Printf("%s has no label rules\n", out.Repo)
	}
	for _, r := range out.Rules {
		fmt.Printf("%s", r.Glob)
		for _, kv := range [][2]string{{"origin", r.Origin}, {"sensitivity", r.Sensitivity}, {"retention", r.Retention}, {"domain", r.Domain}} {
			if kv[1] != "" {
				fmt.Printf(" %s=%s", kv[0], kv[1])
			}
		}
		if r.Reviewed {
			fmt.Print(" reviewed")
		}
		fmt.Println()
	}
	return nil
}

// newHandoffCmd builds `nas handoff`: structured handoffs.
func newHandoffCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "handoff", Short: "Register JSON Schemas that declassify a tainted run's structured output (owner only)",
		Long: "A handoff holds every lease write under GLOB to a JSON Schema: a document that does not validate is\n" +
			"refused, one that does is labelled reviewed, so a privileged run reads it without taking on the\n" +
			"writer's external taint. Only what the schema can check crosses."}
	set := &cobra.Command{Use: "set REPO GLOB SCHEMA.json", Short: "Add the handoff for GLOB, or replace it", Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[2])
			if err != nil {
				return usagef("%v", err)
			}
			if !json.Valid(b) {
				return usagef("%s is not JSON", args[2])
			}
			return printHandoffs(cmd.Context(), apiv1.HandoffSetRequest{Repo: args[0], Handoff: apiv1.Handoff{Glob: args[1], Schema: b}})
		}}
	list, rm := listRmCmds("List the handoffs", "Remove the handoff for GLOB", printHandoffs,
		func(repo string) apiv1.Request { return apiv1.HandoffListRequest{Repo: repo} },
		func(repo, glob string) apiv1.Request { return apiv1.HandoffDeleteRequest{Repo: repo, Glob: glob} })
	cmd.AddCommand(set, list, rm)
	return cmd
}

// printHandoffs calls req and prints the handoffs it answers.
func printHandoffs(ctx context.Context, req apiv1.Request) error {
	var out apiv1.HandoffsResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	if len(out.Handoffs) == 0 {
		fmt.Printf("%s has no handoffs\n", out.Repo)
	}
	for _, h := range out.Handoffs {
		fmt.Printf("%s %s\n", h.Glob, h.Schema)
	}
	return nil
}
