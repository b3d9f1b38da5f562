package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// readOptions are the arguments of `nas read`.
type readOptions struct {
	repo, path, branch, view, lines, section string
	budget                                   int
}

// newReadCmd builds `nas read`.
func newReadCmd() *cobra.Command {
	var o readOptions
	cmd := &cobra.Command{
		Use:   "read REPO PATH",
		Short: "Read a file as the best view that fits a token budget, with evidence pointers",
		Long: "read prints the finest view of PATH at the branch's last commit that fits --budget tokens\n" +
			"(about 4 bytes a token): full, else the --lines or --section asked for, else the outline,\n" +
			"else the outline cut to fit. The content goes to standard output; the view returned, its\n" +
			"tokens, the commit and the evidence pointers go to standard error (or all of it with --json).",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.path = args[0], args[1]
			return runRead(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.branch, "branch", "", "branch (default: the lease's, or the repository's default)")
	f.StringVar(&o.view, "view", "", "outline, section, lines or full (default full; with --lines: lines, with --section: section)")
	f.StringVar(&o.lines, "lines", "", "line range A-B (1-based, inclusive)")
	f.StringVar(&o.section, "section", "", "a Markdown heading (Title or Top/Sub), a Go symbol (F, T.M), a Python def or class, a JSON or YAML key")
	f.IntVar(&o.budget, "budget", 0, fmt.Sprintf("token budget (default %d)", apiv1.DefaultBudgetTokens))
	return cmd
}

// readRequest builds the request from the flags.
func readRequest(o readOptions) (apiv1.FileReadRequest, error) {
	r := apiv1.FileReadRequest{Repo: o.repo, Branch: o.branch, Path: o.path, View: o.view, Section: o.section, BudgetTokens: o.budget}
	if o.lines != "" && o.section != "" {
		return r, usagef("give --lines or --section, not both")
	}
	if o.lines != "" {
		rg, err := parseLines(o.lines)
		if err != nil {
			return r, err
		}
		r.Range = &rg
	}
	r.ImplyView()
	return r, nil
}

// parseLines reads "A-B" or "A".
func parseLines(s string) (apiv1.LineRange, error) {
	a, b, span := strings.Cut(s, "-")
	if !span {
		b = a
	}
	start, err1 := strconv.Atoi(a)
	end, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || start < 1 || end < start {
		return apiv1.LineRange{}, usagef("--lines %q: want A-B with 1 <= A <= B", s)
	}
	return apiv1.LineRange{StartLine: start, EndLine: end}, nil
}

// runRead reads the file and prints the view.
func runRead(ctx context.Context, o readOptions) error {
	req, err := readRequest(o)
	if err != nil {
		return err
	}
	var out apiv1.FileReadResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	fmt.Print(out.Content)
	fmt.Fprintf(os.Stderr, "view %s, %d tokens, truncated %t, commit %s\n", out.View, out.Tokens, out.Truncated, out.Commit)
	if out.Note != "" {
		fmt.Fprintln(os.Stderr, "note:", out.Note)
	}
	for _, e := range out.Evidence {
		fmt.Fprintf(os.Stderr, "evidence %s sha256 %s\n", e.Pointer, e.SHA256)
	}
	return nil
}
