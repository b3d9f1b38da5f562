package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentnas/nas/apiv1"
)

func newMergeCmd() *cobra.Command {
	var into, msg string
	var ours, theirs []string
	var dry bool
	cmd := &cobra.Command{
		Use:   "merge REPO FROM --into TO [--ours PATTERN] [--theirs PATTERN]",
		Short: "Three-way merge of a branch or commit into a branch (the owner's direct merge)",
		Long: "A conflict (both sides changed a key differently, or one changed what the other deleted)\n" +
			"stops the merge and changes nothing; every conflicting key is listed with both sides' ETags.\n" +
			"--ours/--theirs resolve conflicts on keys matching a glob.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if into == "" {
				return usagef("--into is required")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			var out json.RawMessage
			err = c.call(cmd.Context(), "merge/create", map[string]any{"repo": args[0], "from": args[1], "into": into,
				"message": msg, "ours": ours, "theirs": theirs, "dry_run": dry}, &out)
			if errorCode(err) == apiv1.CodeMergeConflict {
				fmt.Fprintln(os.Stderr, "merge conflict; nothing was changed")
			}
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(out)
			}
			var r struct {
				Result struct {
					Commit   string `json:"commit"`
					Applied  int    `json:"applied"`
					UpToDate bool   `json:"up_to_date"`
				} `json:"result"`
			}
			json.Unmarshal(out, &r)
			switch {
			case r.Result.UpToDate:
				fmt.Println("already up to date")
			case dry:
				fmt.Printf("would change %d key(s)\n", r.Result.Applied)
			default:
				fmt.Printf("merged %s into %s: %d key(s) changed, commit %s\n", args[1], into, r.Result.Applied, r.Result.Commit)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "target branch")
	cmd.Flags().StringVarP(&msg, "message", "m", "", "merge commit message")
	cmd.Flags().StringSliceVar(&ours, "ours", nil, "resolve conflicts on keys matching this glob to the target's side")
	cmd.Flags().StringSliceVar(&theirs, "theirs", nil, "resolve conflicts on keys matching this glob to the source's side")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "compute the merge without committing")
	return cmd
}

func newProposeCmd() *cobra.Command {
	var into, intent string
	cmd := &cobra.Command{
		Use:   "propose REPO BRANCH [--into main] [--intent TEXT]",
		Short: "Propose merging a run's branch: policy merges, refuses, or waits for a person at a gate",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var out struct {
				Proposal map[string]any `json:"proposal"`
			}
			if err := c.call(cmd.Context(), "propose/create", map[string]any{"repo": args[0], "branch": args[1], "into": into, "intent": intent}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(out)
			}
			p := out.Proposal
			switch p["status"] {
			case "pending":
				fmt.Printf("gate %v waiting for approval: merge %s into %s (%d change(s), rule %v)\n", p["gate_id"], args[1], into, len(asList(p["changes"])), p["rule"])
			case "merged":
				fmt.Printf("merged by policy (rule %v) · commit %v\n", p["rule"], p["merge_commit"])
			case "refused":
				return fmt.Errorf("refused by policy (rule %v)", p["rule"])
			case "conflict":
				return fmt.Errorf("conflicts with %s: %v", into, p["conflicts"])
			case "up_to_date":
				fmt.Println("nothing to merge")
			default:
				fmt.Printf("%v\n", p["status"])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&into, "into", "main", "target branch")
	cmd.Flags().StringVar(&intent, "intent", "", "why (shown on the Gate Card)")
	return cmd
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func newGateCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "gate", Short: "Decide merges waiting for a person (owner only)"}
	var status, reason string
	list := &cobra.Command{Use: "list", Short: "List gates, newest first", Args: exactArgs(0), RunE: func(cmd *cobra.Command, _ []string) error {
		c, err := newClient()
		if err != nil {
			return err
		}
		var out struct {
			Gates []struct {
				ID     string `json:"gate_id"`
				Status string `json:"status"`
				Repo   string `json:"repo"`
				Card   struct {
					Run    string `json:"run"`
					Action struct {
						From, Into   string
						FilesChanged int `json:"files_changed"`
					} `json:"action"`
					Why string `json:"why"`
				} `json:"card"`
			} `json:"gates"`
		}
		var raw json.RawMessage
		if err := c.call(cmd.Context(), "gate/list", map[string]any{"status": status}, &raw); err != nil {
			return err
		}
		if cf.json {
			return printJSON(raw)
		}
		json.Unmarshal(raw, &out)
		for _, g := range out.Gates {
			fmt.Printf("%s\t%s\t%s: %s -> %s, %d change(s)\t%s\n", g.ID, g.Status, g.Repo, g.Card.Action.From, g.Card.Action.Into, g.Card.Action.FilesChanged, g.Card.Why)
		}
		return nil
	}}
	list.Flags().StringVar(&status, "status", "", "only gates in this state (pending, approved, denied, expired, void)")
	show := &cobra.Command{Use: "show GATE_ID", Short: "Print the Gate Card: the gateway's diff, its digest, the read manifest", Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var out struct {
				Gate struct {
					Card json.RawMessage `json:"card"`
				} `json:"gate"`
			}
			if err := c.call(cmd.Context(), "gate/get", map[string]any{"gate_id": args[0]}, &out); err != nil {
				return err
			}
			return printJSON(out.Gate.Card)
		}}
	decide := func(op, verb string) *cobra.Command {
		d := &cobra.Command{Use: verb + " GATE_ID", Short: strings.ToUpper(verb[:1]) + verb[1:] + " a gate", Args: exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := newClient()
				if err != nil {
					return err
				}
				var out struct {
					Gate map[string]any `json:"gate"`
				}
				if err := c.call(cmd.Context(), op, map[string]any{"gate_id": args[0], "reason": reason}, &out); err != nil {
					return err
				}
				if cf.json {
					return printJSON(out)
				}
				if m := out.Gate["merge_commit"]; m != nil && m != "" {
					fmt.Printf("%s · merged · commit %v\n", out.Gate["status"], m)
				} else {
					fmt.Printf("%v\n", out.Gate["status"])
				}
				return nil
			}}
		d.Flags().StringVar(&reason, "reason", "", "why (recorded)")
		return d
	}
	stats := &cobra.Command{Use: "stats", Short: "Approval rate and time to decide", Args: exactArgs(0), RunE: func(cmd *cobra.Command, _ []string) error {
		return jsonCall(cmd, "gate/stats", map[string]any{})
	}}
	cmd.AddCommand(list, show, decide("gate/approve", "approve"), decide("gate/deny", "deny"), stats)
	return cmd
}

func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "The rules that decide proposals (merge, gate or refuse)"}
	get := &cobra.Command{Use: "get REPO", Short: "Print a repository's policy", Args: exactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return jsonCall(cmd, "policy/get", map[string]any{"repo": args[0]})
	}}
	set := &cobra.Command{Use: "set REPO FILE", Short: "Replace a repository's policy with a JSON or YAML rules file", Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			var pol any
			if err := yamlOrJSON(b, &pol); err != nil {
				return usagef("%s: %v", args[1], err)
			}
			return jsonCall(cmd, "policy/set", map[string]any{"repo": args[0], "policy": pol})
		}}
	cmd.AddCommand(get, set)
	return cmd
}

func newCheckpointCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "checkpoint", Short: "Name a branch's state and restore it later (owner only)"}
	create := &cobra.Command{Use: "create REPO BRANCH NAME", Short: "Name the branch's head commit", Args: exactArgs(3), RunE: func(cmd *cobra.Command, a []string) error {
		return simpleCall(cmd, "checkpoint/create", map[string]any{"repo": a[0], "branch": a[1], "name": a[2]}, "checkpoint "+a[2]+" of "+a[1])
	}}
	list := &cobra.Command{Use: "list REPO [BRANCH]", Short: "List checkpoints", Args: cobra.RangeArgs(1, 2), RunE: func(cmd *cobra.Command, a []string) error {
		br := ""
		if len(a) == 2 {
			br = a[1]
		}
		return jsonCall(cmd, "checkpoint/list", map[string]any{"repo": a[0], "branch": br})
	}}
	restore := &cobra.Command{Use: "restore REPO BRANCH NAME", Short: "Commit the checkpoint's tree on the branch, keeping history", Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, a []string) error {
			return jsonCall(cmd, "checkpoint/restore", map[string]any{"repo": a[0], "branch": a[1], "name": a[2]})
		}}
	cmd.AddCommand(create, list, restore)
	return cmd
}

func newTrashCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "trash", Short: "What merges deleted from protected branches, kept 7 days (owner only)"}
	list := &cobra.Command{Use: "list REPO [PREFIX]", Short: "List trashed objects", Args: cobra.RangeArgs(1, 2), RunE: func(cmd *cobra.Command, a []string) error {
		p := ""
		if len(a) == 2 {
			p = a[1]
		}
		return jsonCall(cmd, "trash/list", map[string]any{"repo": a[0], "prefix": p})
	}}
	restore := &cobra.Command{Use: "restore REPO PATH", Short: "Put a trashed object back with a commit", Args: exactArgs(2), RunE: func(cmd *cobra.Command, a []string) error {
		return jsonCall(cmd, "trash/restore", map[string]any{"repo": a[0], "path": a[1]})
	}}
	cmd.AddCommand(list, restore)
	return cmd
}

// yamlOrJSON decodes a YAML (or JSON, a subset of YAML) document.
func yamlOrJSON(b []byte, v any) error { return yaml.Unmarshal(b, v) }
