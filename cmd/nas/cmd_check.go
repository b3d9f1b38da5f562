package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newCheckCmd builds `nas check`: a repository's pre-merge checks.
func newCheckCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "check", Short: "Pre-merge checks: webhooks or commands a merge into a branch requires (owner only)",
		Long: "A check looks at a proposal's diff and answers pass or fail. A webhook check receives the proposal as a signed JSON POST " +
			"(x-nas-signature: t=UNIX,v1=HEX, the HMAC-SHA256 with the check's secret of \"UNIX.\" and the body) and answers " +
			"{\"state\":\"pass\"|\"fail\",\"message\":\"...\"}; a command check is a program in the gateway's --check-commands folder, " +
			"given the proposal on stdin; exit 0 passes. `nas check require` names the checks a merge into a branch needs: " +
			"an approval or a merge waits until they passed on the proposal's digest."}
	cmd.AddCommand(newCheckAddCmd(), newCheckListCmd(), newCheckRemoveCmd(), newCheckRequireCmd(), newCheckResultsCmd(), newCheckRerunCmd())
	return cmd
}

// checkAddOptions are the arguments and flags of `nas check add`.
type checkAddOptions struct {
	repo, name, url, command string
	args                     []string
	timeout                  time.Duration
}

// newCheckAddCmd builds `nas check add`.
func newCheckAddCmd() *cobra.Command {
	var o checkAddOptions
	cmd := &cobra.Command{
		Use:   "add REPO NAME (--url URL | --command PATH [--arg A]...) [--timeout D]",
		Short: "Register a check; a webhook's secret is printed once",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runCheckAdd(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "a webhook check: where the proposal is POSTed")
	f.StringVar(&o.command, "command", "", "a command check: an absolute path in the gateway's --check-commands folder")
	f.StringArrayVar(&o.args, "arg", nil, "an argument of the command (repeat for more)")
	f.DurationVar(&o.timeout, "timeout", 0, "bound of one attempt (default: 30s for a webhook, 5m for a command)")
	return cmd
}

func runCheckAdd(ctx context.Context, o checkAddOptions) error {
	if (o.url == "") == (o.command == "") {
		return usagef("nas check add needs --url or --command, one of them")
	}
	var out apiv1.CheckResponse
	req := apiv1.CheckAddRequest{Repo: o.repo, Name: o.name, URL: o.url, Command: o.command, Args: o.args, TimeoutSeconds: int64(o.timeout / time.Second)}
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("%s\t%s\t%s%s\n", out.Check.Name, out.Check.Kind, out.Check.URL, out.Check.Command)
	if out.Check.Secret != "" {
		fmt.Printf("secret (shown once; it signs every request): %s\n", out.Check.Secret)
	}
	return nil
}

// checkRepoOptions are the arguments of `nas check list`.
type checkRepoOptions struct{ repo string }

// newCheckListCmd builds `nas check list`.
func newCheckListCmd() *cobra.Command {
	var o checkRepoOptions
	return &cobra.Command{
		Use:   "list REPO",
		Short: "List a repository's checks and the branches that require them",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			return runCheckList(cmd.Context(), o)
		},
	}
}

func runCheckList(ctx context.Context, o checkRepoOptions) error {
	var out apiv1.CheckListResponse
	if err := doCall(ctx, apiv1.CheckListRequest{Repo: o.repo}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, c := range out.Checks {
		fmt.Printf("%s\t%s\t%s%s %s\n", c.Name, c.Kind, c.URL, c.Command, strings.Join(c.Args, " "))
	}
	for _, r := range out.Rules {
		fmt.Printf("merges into %s require %s\n", r.Branch, strings.Join(r.Checks, ","))
	}
	return nil
}

// checkNameOptions are the arguments of `nas check remove`.
type checkNameOptions struct{ repo, name string }

// newCheckRemoveCmd builds `nas check remove`.
func newCheckRemoveCmd() *cobra.Command {
	var o checkNameOptions
	return &cobra.Command{
		Use:   "remove REPO NAME",
		Short: "Remove a check (a branch that requires it stays refused until its rule changes)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			var out apiv1.CheckResponse
			if err := doCall(cmd.Context(), apiv1.CheckRemoveRequest{Repo: o.repo, Name: o.name}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			fmt.Println("removed", o.name)
			return nil
		},
	}
}

// checkRequireOptions are the arguments of `nas check require`.
type checkRequireOptions struct {
	repo, branch string
	names        []string
}

// newCheckRequireCmd builds `nas check require`.
func newCheckRequireCmd() *cobra.Command {
	var o checkRequireOptions
	return &cobra.Command{
		Use:   "require REPO BRANCH [NAME,...]",
		Short: "Set the checks a merge into BRANCH requires (no names: none)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.branch = args[0], args[1]
			if n := optArg(args, 2); n != "" {
				o.names = strings.Split(n, ",")
			}
			return runCheckRequire(cmd.Context(), o)
		},
	}
}

func runCheckRequire(ctx context.Context, o checkRequireOptions) error {
	var out apiv1.CheckRequireResponse
	if err := doCall(ctx, apiv1.CheckRequireRequest{Repo: o.repo, Branch: o.branch, Checks: o.names}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	if len(out.Rule.Checks) == 0 {
		fmt.Printf("merges into %s require no checks\n", out.Rule.Branch)
		return nil
	}
	fmt.Printf("merges into %s require %s\n", out.Rule.Branch, strings.Join(out.Rule.Checks, ","))
	return nil
}

// checkProposalOptions are the arguments of `nas check results` and
// `nas check rerun`.
type checkProposalOptions struct {
	proposal string
	names    []string
}

// newCheckResultsCmd builds `nas check results`.
func newCheckResultsCmd() *cobra.Command {
	var o checkProposalOptions
	return &cobra.Command{
		Use:   "results PROPOSAL_ID",
		Short: "A proposal's check results: state, digest, message",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.proposal = args[0]
			var out apiv1.CheckResultsResponse
			if err := doCall(cmd.Context(), apiv1.CheckResultsRequest{ProposalID: o.proposal}, &out); err != nil {
				return err
			}
			return printCheckResults(&out)
		},
	}
}

// newCheckRerunCmd builds `nas check rerun`.
func newCheckRerunCmd() *cobra.Command {
	var o checkProposalOptions
	return &cobra.Command{
		Use:   "rerun PROPOSAL_ID [NAME...]",
		Short: "Run a waiting proposal's checks again (names: only those), on its digest",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.proposal, o.names = args[0], args[1:]
			var out apiv1.CheckResultsResponse
			if err := doCall(cmd.Context(), apiv1.CheckRerunRequest{ProposalID: o.proposal, Checks: o.names}, &out); err != nil {
				return err
			}
			return printCheckResults(&out)
		},
	}
}

func printCheckResults(out *apiv1.CheckResultsResponse) error {
	if cf.json {
		return printJSON(out)
	}
	for _, r := range out.Results {
		req := ""
		if r.Required {
			req = " (required)"
		}
		fmt.Printf("%s%s\t%s\t%.12s\t%s\n", r.Name, req, r.State, r.DiffSHA256, strings.ReplaceAll(strings.TrimSpace(r.Message), "\n", " | "))
	}
	return nil
}
