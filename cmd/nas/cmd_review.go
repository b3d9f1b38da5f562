package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentnas/nas/apiv1"
)

func newMergeCmd() *cobra.Command {
	var req apiv1.MergeCreateRequest
	cmd := &cobra.Command{
		Use:   "merge REPO FROM --into TO [--ours PATTERN] [--theirs PATTERN]",
		Short: "Three-way merge of a branch or commit into a branch (the owner's direct merge)",
		Long: "A conflict (both sides changed a key differently, or one changed what the other deleted)\n" +
			"stops the merge and changes nothing; every conflicting key is listed with both sides' ETags.\n" +
			"--ours/--theirs resolve conflicts on keys matching a glob.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Into == "" {
				return usagef("--into is required")
			}
			req.Repo, req.From = args[0], args[1]
			var out apiv1.MergeCreateResponse
			err := doCall(cmd.Context(), req, &out)
			if errorCode(err) == apiv1.CodeMergeConflict {
				fmt.Fprintln(os.Stderr, "merge conflict; nothing was changed")
			}
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			r := out.Result
			switch {
			case r.UpToDate:
				fmt.Println("already up to date")
			case req.DryRun:
				fmt.Printf("would change %d key(s)\n", r.Applied)
			default:
				fmt.Printf("merged %s into %s: %d key(s) changed, commit %s\n", req.From, req.Into, r.Applied, r.Commit)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Into, "into", "", "target branch")
	cmd.Flags().StringVarP(&req.Message, "message", "m", "", "merge commit message")
	cmd.Flags().StringSliceVar(&req.Ours, "ours", nil, "resolve conflicts on keys matching this glob to the target's side")
	cmd.Flags().StringSliceVar(&req.Theirs, "theirs", nil, "resolve conflicts on keys matching this glob to the source's side")
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "compute the merge without committing")
	return cmd
}

func newProposeCmd() *cobra.Command {
	var req apiv1.ProposeCreateRequest
	cmd := &cobra.Command{
		Use:   "propose REPO BRANCH [--into main] [--intent TEXT]",
		Short: "Propose merging a run's branch: policy merges, refuses, or waits for a person at a gate",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Repo, req.Branch = args[0], args[1]
			var out apiv1.ProposeCreateResponse
			if err := doCall(cmd.Context(), req, &out); err != nil {
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
		},
	}
	cmd.Flags().StringVar(&req.Into, "into", "", "target branch (default: the branch the run was forked from, else main)")
	cmd.Flags().StringVar(&req.Intent, "intent", "", "why (shown on the Gate Card)")
	return cmd
}

// printProposal says what became of a proposal of branch into into; a
// refusal or a conflict is an error.
func printProposal(p *apiv1.Proposal) error {
	branch, into := p.From, p.Into
	switch p.Status {
	case "pending":
		fmt.Printf("gate %s waiting for approval: merge %s into %s (%d change(s), rule %s)\n", p.GateID, branch, into, len(p.Changes), p.Rule)
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

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "The rules that decide proposals (merge, gate or refuse)"}
	get := &cobra.Command{Use: "get REPO", Short: "Print a repository's policy", Args: exactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return jsonCall(cmd.Context(), apiv1.PolicyGetRequest{Repo: args[0]}, &apiv1.PolicyResponse{})
	}}
	set := &cobra.Command{Use: "set REPO FILE", Short: "Replace a repository's policy with a JSON or YAML rules file", Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			pol, err := readPolicy(args[1])
			if err != nil {
				return err
			}
			return jsonCall(cmd.Context(), apiv1.PolicySetRequest{Repo: args[0], Policy: pol}, &apiv1.PolicyResponse{})
		}}
	cmd.AddCommand(get, set)
	return cmd
}

// readPolicy reads a YAML (or JSON, a subset of YAML) rules file. Its
// fields are the API's (max_changes, ...); an unknown one is refused.
func readPolicy(path string) (apiv1.Policy, error) {
	var pol apiv1.Policy
	b, err := os.ReadFile(path)
	if err != nil {
		return pol, err
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return pol, usagef("%s: %v", path, err)
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return pol, usagef("%s: %v", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pol); err != nil {
		return pol, usagef("%s: %v", path, err)
	}
	return pol, nil
}

func newCheckpointCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "checkpoint", Short: "Name a branch's state and restore it later (owner only)"}
	create := &cobra.Command{Use: "create REPO BRANCH NAME", Short: "Name the branch's head commit", Args: exactArgs(3), RunE: func(cmd *cobra.Command, a []string) error {
		req := apiv1.CheckpointCreateRequest{Repo: a[0], Branch: a[1], Name: a[2]}
		return simpleCall(cmd.Context(), req, &apiv1.CheckpointResponse{}, "checkpoint "+a[2]+" of "+a[1])
	}}
	list := &cobra.Command{Use: "list REPO [BRANCH]", Short: "List checkpoints", Args: cobra.RangeArgs(1, 2), RunE: func(cmd *cobra.Command, a []string) error {
		req := apiv1.CheckpointListRequest{Repo: a[0]}
		if len(a) == 2 {
			req.Branch = a[1]
		}
		return jsonCall(cmd.Context(), req, &apiv1.CheckpointListResponse{})
	}}
	restore := &cobra.Command{Use: "restore REPO BRANCH NAME", Short: "Commit the checkpoint's tree on the branch, keeping history", Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, a []string) error {
			return jsonCall(cmd.Context(), apiv1.CheckpointRestoreRequest{Repo: a[0], Branch: a[1], Name: a[2]}, &apiv1.RestoreResponse{})
		}}
	cmd.AddCommand(create, list, restore)
	return cmd
}

func newTrashCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trash", Short: "What merges deleted from protected branches, kept 7 days (owner only)"}
	list := &cobra.Command{Use: "list REPO [PREFIX]", Short: "List trashed objects", Args: cobra.RangeArgs(1, 2), RunE: func(cmd *cobra.Command, a []string) error {
		req := apiv1.TrashListRequest{Repo: a[0]}
		if len(a) == 2 {
			req.Prefix = a[1]
		}
		return jsonCall(cmd.Context(), req, &apiv1.TrashListResponse{})
	}}
	restore := &cobra.Command{Use: "restore REPO PATH", Short: "Put a trashed object back with a commit", Args: exactArgs(2), RunE: func(cmd *cobra.Command, a []string) error {
		return jsonCall(cmd.Context(), apiv1.TrashRestoreRequest{Repo: a[0], Path: a[1]}, &apiv1.RestoreResponse{})
	}}
	cmd.AddCommand(list, restore)
	return cmd
}
