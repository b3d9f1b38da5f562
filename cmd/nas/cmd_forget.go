package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newForgetCmd builds `nas forget`.
func newForgetCmd() *cobra.Command {
	var req apiv1.ForgetRequest
	var out string
	cmd := &cobra.Command{
		Use:   "forget REPO --paths GLOB [--paths GLOB]... [--subject S] [--domain D]... [--keep-history] [--dry-run] [--out forget-report.json]",
		Short: "Forget files and what was derived from them on every branch, and report what was not covered (owner only)",
		Long: "forget removes the files the globs match, the notes that cite them or are about --subject, and the\n" +
			"search index, from every branch (protected ones too, with one commit each, nothing trashed). Then it\n" +
			"rewrites every commit, checkpoint and deleted branch that still holds them (old commit IDs stop\n" +
			"resolving) and collects garbage, so their bytes leave the chunk store. --keep-history skips the\n" +
			"rewrite; the report then lists the checkpoints that still hold the content. A legal hold (nas hold)\n" +
			"on any key found blocks it. Sensitive files are sealed under a key domain: --domain destroys a\n" +
			"domain's keys, so nothing sealed under it can be read again anywhere (old commits, exports,\n" +
			"backups); the domains of forgotten sensitive files go too when no kept file uses them. The report\n" +
			"always lists what no NAS can reach.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Repo = args[0]
			if len(req.Paths) == 0 && len(req.Domains) == 0 {
				return usagef("forget needs --paths or --domain")
			}
			return runForget(cmd.Context(), req, out)
		},
	}
	cmd.Flags().StringArrayVar(&req.Paths, "paths", nil, "a glob of the files to forget (repeatable)")
	cmd.Flags().StringVar(&req.Subject, "subject", "", "also forget the notes about this subject")
	cmd.Flags().StringArrayVar(&req.Domains, "domain", nil, "destroy the keys of this key domain of sensitive files (repeatable)")
	cmd.Flags().BoolVar(&req.KeepHistory, "keep-history", false, "remove from the branches only; do not rewrite the history that still holds it")
	cmd.Flags().BoolVar(&req.DryRun, "dry-run", false, "report what would be forgotten and change nothing")
	cmd.Flags().StringVar(&out, "out", "", "write forget-report.json here")
	return cmd
}

// runForget forgets and prints (and with --out writes) the report.
func runForget(ctx context.Context, req apiv1.ForgetRequest, out string) error {
	var rep apiv1.ForgetReport
	if err := doCall(ctx, req, &rep); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if out != "" {
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if cf.json {
		return printJSON(rep)
	}
	verb := "forgot"
	if rep.DryRun {
		verb = "would forget"
	}
	fmt.Printf("%s %s: %s %d file(s) and %d note(s) on %d branch(es); %d index(es) deleted\n", rep.ForgetID, rep.State, verb,
		rep.Report.FilesRemoved, rep.Report.DerivedRemoved.Notes, len(rep.Removed), rep.Report.DerivedRemoved.Indexes)
	fmt.Printf("history: %s\n", rep.Report.History)
	for _, s := range rep.Report.SnapshotsPending {
		fmt.Printf("still holds it: %s\n", s)
	}
	for _, s := range rep.Report.NotCovered {
		fmt.Printf("not covered: %s\n", s)
	}
	return nil
}

// newHoldCmd builds `nas hold`: legal holds.
func newHoldCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "hold", Short: "Place, list or lift legal holds, which block forgetting (owner only)"}
	var reason string
	set := &cobra.Command{Use: "set REPO GLOB [--reason R]", Short: "Place a hold on the keys GLOB matches (recorded)", Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printHolds(cmd.Context(), apiv1.HoldSetRequest{Repo: args[0], Glob: args[1], Reason: reason})
		}}
	set.Flags().StringVar(&reason, "reason", "", "why (a case, a ticket)")
	list, rm := listRmCmds("List the holds", "Lift the hold on GLOB (recorded)", printHolds,
		func(repo string) apiv1.Request { return apiv1.HoldListRequest{Repo: repo} },
		func(repo, glob string) apiv1.Request { return apiv1.HoldDeleteRequest{Repo: repo, Glob: glob} })
	cmd.AddCommand(set, list, rm)
	return cmd
}

// printHolds calls req and prints the holds it answers.
func printHolds(ctx context.Context, req apiv1.Request) error {
	var out apiv1.HoldsResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	if len(out.Holds) == 0 {
		fmt.Printf("%s has no legal holds\n", out.Repo)
	}
	for _, h := range out.Holds {
		fmt.Printf("%s since %s: %s\n", h.Glob, h.SetAt.Format("2006-01-02 15:04"), h.Reason)
	}
	return nil
}
