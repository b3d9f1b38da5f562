package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// Agent memory from the command line: `nas remember`, `nas recall` and
// `nas recall test`, one call each of memory/remember, memory/recall and
// memory/test, as the MCP tools nas_remember and nas_recall make them.

// maxNoteBody bounds a note body read from standard input.
const maxNoteBody = 1 << 20

// rememberOptions are the arguments of `nas remember`.
type rememberOptions struct {
	req        apiv1.MemoryRememberRequest
	confidence float64
}

// newRememberCmd builds `nas remember`.
func newRememberCmd() *cobra.Command {
	var o rememberOptions
	cmd := &cobra.Command{
		Use:   "remember REPO[@BRANCH] --kind KIND --subject SUBJECT BODY... | -",
		Short: "Write a note into an Agent Home and commit it",
		Long: "remember writes a new note (Markdown with the specification's front matter) into the Home's\n" +
			"memory/notes/ and commits it on the branch (a lease's: its own, into its role's Home). A note\n" +
			"is never overwritten: --supersedes names the notes it replaces. --source takes evidence pointers\n" +
			"(nas://REPO/PATH@COMMIT#Lx-Ly) that must exist at their commits. BODY \"-\" reads standard input.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("%s takes REPO[@BRANCH] and a body\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.req.Repo, o.req.Branch, _ = strings.Cut(args[0], "@")
			if cmd.Flags().Changed("confidence") {
				o.req.Confidence = &o.confidence
			}
			body, err := noteBody(args[1:], os.Stdin)
			if err != nil {
				return err
			}
			o.req.Body = body
			return runRemember(cmd.Context(), o.req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.req.Home, "home", "", "the Home, agents/ROLE (default: the lease's role's; the owner must name one)")
	f.StringVar(&o.req.Kind, "kind", "", "episodic, semantic, procedural or preference")
	f.StringVar(&o.req.Subject, "subject", "", "what the note is about, e.g. customer/acme")
	f.StringArrayVar(&o.req.Sources, "source", nil, "an evidence pointer the note rests on (repeatable)")
	f.StringArrayVar(&o.req.Supersedes, "supersedes", nil, "the ID of a note of the same Home this one replaces (repeatable)")
	f.Float64Var(&o.confidence, "confidence", 0, "0 to 1 (default 0.8)")
	f.StringVar(&o.req.ValidFrom, "valid-from", "", "RFC 3339 time the fact holds from (default now)")
	f.StringVar(&o.req.ValidTo, "valid-to", "", "RFC 3339 time the fact stops holding")
	f.StringVar(&o.req.Intent, "intent", "", "the commit message (default: remember PATH)")
	return cmd
}

// noteBody is the body the arguments give: their words, or standard
// input when the one argument is "-".
func noteBody(args []string, stdin io.Reader) (string, error) {
	if len(args) != 1 || args[0] != "-" {
		return strings.Join(args, " ") + "\n", nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxNoteBody+1))
	if err != nil {
		return "", fmt.Errorf("read the body: %w", err)
	}
	if len(b) > maxNoteBody {
		return "", usagef("the body on standard input is over %d bytes", maxNoteBody)
	}
	return string(b), nil
}

// runRemember writes the note and prints where it went.
func runRemember(ctx context.Context, req apiv1.MemoryRememberRequest) error {
	var out apiv1.MemoryRememberResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	q := ""
	if out.Quarantined {
		q = " (quarantined: it rests on a quarantined note)"
	}
	fmt.Printf("%s %s at commit %s%s\n", out.Note.ID, out.Path, out.Commit, q)
	return nil
}

// recallOptions are the arguments of `nas recall`.
type recallOptions struct{ req apiv1.MemoryRecallRequest }

// newRecallCmd builds `nas recall` and `nas recall test`.
func newRecallCmd() *cobra.Command {
	var o recallOptions
	cmd := &cobra.Command{
		Use:   "recall REPO[@BRANCH] QUERY...",
		Short: "Recall the notes of an Agent Home that match a query, within a token budget",
		Long: "recall searches the Home's notes at the branch's last commit and prints the best, each with its\n" +
			"ID, subject, review state and evidence pointer, and its body while the budget lasts. Notes that\n" +
			"another supersedes are left out unless --include-superseded; quarantined notes are shown and\n" +
			"left out unless --include-quarantine (they are never autoloaded). `nas recall test` runs the Home's golden recall tests.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("%s takes REPO[@BRANCH] and a query\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.req.Repo, o.req.Branch, _ = strings.Cut(args[0], "@")
			o.req.Query = strings.Join(args[1:], " ")
			return runRecall(cmd.Context(), o.req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.req.Home, "home", "", "the Home, agents/ROLE (default: the lease's role's; the owner must name one)")
	f.IntVar(&o.req.Limit, "limit", 0, fmt.Sprintf("most notes (default %d)", apiv1.DefaultSearchLimit))
	f.IntVar(&o.req.BudgetTokens, "budget", 0, fmt.Sprintf("token budget of the bodies (default %d)", apiv1.DefaultBudgetTokens))
	f.BoolVar(&o.req.IncludeSuperseded, "include-superseded", false, "also recall notes another supersedes")
	f.BoolVar(&o.req.IncludeQuarantine, "include-quarantine", false, "also recall quarantined notes (marked)")
	cmd.AddCommand(newRecallTestCmd())
	return cmd
}

// runRecall recalls and prints the notes, best first.
func runRecall(ctx context.Context, req apiv1.MemoryRecallRequest) error {
	var out apiv1.MemoryRecallResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	for _, n := range out.Notes {
		fmt.Printf("%s %s %s (score %.3f)%s\n", n.ID, n.Kind, n.Subject, n.Score, noteMarks(n))
		for _, l := range strings.SplitAfter(strings.TrimSuffix(n.Body, "\n"), "\n") {
			if l != "" {
				fmt.Printf("    %s", strings.TrimSuffix(l, "\n")+"\n")
			}
		}
		fmt.Printf("  %s evidence %s\n", n.Path, n.Evidence.Pointer)
	}
	cut := ""
	if out.Truncated {
		cut = "; bodies past the budget left out"
	}
	fmt.Fprintf(os.Stderr, "%d note(s) at commit %s, %d tokens%s\n", len(out.Notes), out.Commit, out.Tokens, cut)
	return nil
}

// noteMarks says what a reader must know of a recalled note beside its
// text: not reviewed, quarantined, superseded, body left out.
func noteMarks(n apiv1.RecalledNote) string {
	var m []string
	if !n.Reviewed {
		m = append(m, "unreviewed")
	}
	if n.Quarantined {
		m = append(m, "QUARANTINED")
	}
	if len(n.SupersededBy) > 0 {
		m = append(m, "superseded by "+strings.Join(n.SupersededBy, ","))
	}
	if n.Truncated {
		m = append(m, "body left out")
	}
	if len(m) == 0 {
		return ""
	}
	return " [" + strings.Join(m, "; ") + "]"
}

// recallTestOptions are the arguments of `nas recall test`.
type recallTestOptions struct {
	req     apiv1.MemoryTestRequest
	rebuild bool
}

// errRecallFailed ends `nas recall test` when a case fails (exit 1).
var errRecallFailed = errors.New("recall tests failed")

// newRecallTestCmd builds `nas recall test`.
func newRecallTestCmd() *cobra.Command {
	var o recallTestOptions
	cmd := &cobra.Command{
		Use:   "test REPO[@BRANCH]",
		Short: "Run the Home's golden recall tests (HOME/recall-tests.yaml); exit 1 when one fails",
		Long: "test runs HOME/recall-tests.yaml at the branch's last commit: a YAML list of cases\n\n" +
			"  - query: who is the champion at acme\n    expect: [mem_4kq2]\n    top_k: 3\n\n" +
			"each passing when recall of the query returns every expected note (among the first top_k).\n" +
			"--rebuild then deletes and rebuilds the repository's index (owner only) and runs them again:\n" +
			"the index is a derivative, and the tests must pass on a fresh one.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.req.Repo, o.req.Branch, _ = strings.Cut(args[0], "@")
			return runRecallTest(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.req.Home, "home", "", "the Home, agents/ROLE (default: the lease's role's; the owner must name one)")
	cmd.Flags().BoolVar(&o.rebuild, "rebuild", false, "then rebuild the index and run the tests again")
	return cmd
}

// runRecallTest runs the tests (twice with --rebuild) and prints each
// case; any failure is errRecallFailed.
func runRecallTest(ctx context.Context, o recallTestOptions) error {
	var runs []apiv1.MemoryTestResponse
	for i := range 2 {
		if i == 1 {
			if !o.rebuild {
				break
			}
			if err := doCall(ctx, apiv1.IndexRebuildRequest{Repo: o.req.Repo, Branch: o.req.Branch}, &apiv1.IndexResponse{}); err != nil {
				return err
			}
		}
		var out apiv1.MemoryTestResponse
		if err := doCall(ctx, o.req, &out); err != nil {
			return err
		}
		runs = append(runs, out)
	}
	if cf.json {
		if err := printJSON(runs); err != nil {
			return err
		}
	} else {
		printRecallTests(runs)
	}
	for _, r := range runs {
		if r.Failed > 0 {
			return errRecallFailed
		}
	}
	return nil
}

// printRecallTests prints each run's cases, ok or FAIL with what recall
// returned, and a tally.
func printRecallTests(runs []apiv1.MemoryTestResponse) {
	for i, r := range runs {
		if i == 1 {
			fmt.Println("after rebuilding the index:")
		}
		for _, c := range r.Cases {
			if c.Pass {
				fmt.Printf("ok    %q\n", c.Query)
				continue
			}
			fmt.Printf("FAIL  %q: missing %s; recall returned [%s]\n", c.Query, strings.Join(c.Missing, ","), strings.Join(c.Got, ","))
		}
		fmt.Printf("%s at commit %s: %d passed, %d failed\n", r.Home, r.Commit, r.Passed, r.Failed)
	}
}

// newMemoryCmd builds `nas memory`: the owner's side of agent memory.
func newMemoryCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "memory", Short: "Review agent memory (owner only)"}
	var req apiv1.MemoryReviewRequest
	review := &cobra.Command{
		Use:   "review REPO[@BRANCH] --home agents/ROLE [--release ID]...",
		Short: "List a Home's quarantined notes, or release them (reviewed) into its notes",
		Long: "review lists the notes a tainted session wrote, which recall shows marked and never autoloads.\n" +
			"--release moves each named note to memory/notes/ marked reviewed, in one commit.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Repo, req.Branch, _ = strings.Cut(args[0], "@")
			return runMemoryReview(cmd.Context(), req)
		},
	}
	review.Flags().StringVar(&req.Home, "home", "", "the Home, agents/ROLE")
	review.Flags().StringArrayVar(&req.Release, "release", nil, "the ID of a quarantined note to release (repeatable)")
	cmd.AddCommand(review)
	return cmd
}

// runMemoryReview reviews and prints what waits and what was released.
func runMemoryReview(ctx context.Context, req apiv1.MemoryReviewRequest) error {
	var out apiv1.MemoryReviewResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(out)
	}
	for _, id := range out.Released {
		fmt.Printf("released %s\n", id)
	}
	if out.Commit != "" {
		fmt.Printf("commit %s\n", out.Commit)
	}
	for _, q := range out.Quarantined {
		fmt.Printf("%s %s %s (%s): %s", q.ID, q.Kind, q.Subject, q.Path, firstLine(q.Body))
	}
	fmt.Fprintf(os.Stderr, "%d note(s) of %s wait for review\n", len(out.Quarantined), out.Home)
	return nil
}

// firstLine is s's first line with its newline.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l + "\n"
}
