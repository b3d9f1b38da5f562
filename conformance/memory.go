package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/mcpserver"
)

// L2 Memory: agent memory and its indexes (L2.1-L2.3), budgeted reads
// and evidence pointers (L2.4, L2.5), over the control API and over MCP,
// as an agent's host would call them.

// l2Checks are the L2 tests, in the specification's order where they
// are written.
var l2Checks = []check{
	{"L2.1", checkRecallRebuilt},
	{"L2.2", checkPlainNotes},
	{"L2.3", checkRecipes},
	{"L2.4", checkBudgetedRead},
	{"L2.5", checkEvidence},
}

// report is a Markdown file of n sections, long enough that a 400-token
// budget cannot hold it whole.
func report(n int) string {
	var b strings.Builder
	b.WriteString("# Launch report\n\n")
	for i := range n {
		fmt.Fprintf(&b, "## Part %d\n\nFindings of part %d: %s\n\n", i, i, strings.Repeat("the numbers hold up. ", 30))
	}
	return b.String()
}

// runWith issues a run lease and commits files on its branch.
func (r *run) runWith(ctx context.Context, files map[string]string) (*principal, apiv1.Lease, error) {
	lc, l, err := r.runLease(ctx)
	if err != nil {
		return nil, l, err
	}
	for k, v := range files {
		if err := lc.put(ctx, r.repo, k, v); err != nil {
			return nil, l, fmt.Errorf("write %s: %w", k, err)
		}
	}
	if err := lc.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: l.Branch, Message: "conformance files"}, nil); err != nil {
		return nil, l, err
	}
	return lc, l, nil
}

// checkBudgetedRead is L2.4: a read whose budget cannot hold the file
// degrades to a coarser view and says so, never a silent cut; with room
// it is the whole file; MCP's nas_read answers the same.
func checkBudgetedRead(ctx context.Context, r *run) (bool, string, string) {
	const path = "shared/launch/report.md"
	body := report(60)
	lc, l, err := r.runWith(ctx, map[string]string{path: body})
	if err != nil {
		return false, err.Error(), ""
	}
	small, err := lc.api.ReadFile(ctx, apiv1.FileReadRequest{Repo: r.repo, Path: path, View: apiv1.ViewFull, BudgetTokens: 400})
	if err != nil {
		return false, "files/read: " + err.Error(), ""
	}
	if small.View == apiv1.ViewFull || small.Tokens > 400 || len(small.Content) > 4*400 || small.Note == "" {
		return false, fmt.Sprintf("a full read of %d bytes in 400 tokens answered view %s, %d tokens, %d bytes, note %q",
			len(body), small.View, small.Tokens, len(small.Content), small.Note), ""
	}
	whole, err := lc.api.ReadFile(ctx, apiv1.FileReadRequest{Repo: r.repo, Path: path, View: apiv1.ViewFull, BudgetTokens: 100000})
	if err != nil {
		return false, "files/read: " + err.Error(), ""
	}
	if whole.View != apiv1.ViewFull || whole.Content != body || whole.Tokens != (len(body)+3)/4 || whole.Truncated {
		return false, fmt.Sprintf("a full read with room answered view %s, %d of %d bytes, %d tokens", whole.View, len(whole.Content), len(body), whole.Tokens), ""
	}
	var viaMCP apiv1.FileReadResponse
	if err := callMCP(ctx, lc, l, "nas_read", map[string]any{"path": path, "budget_tokens": 400}, &viaMCP); err != nil {
		return false, "nas_read: " + err.Error(), ""
	}
	if viaMCP.View != small.View || viaMCP.Tokens != small.Tokens || viaMCP.Content != small.Content {
		return false, fmt.Sprintf("nas_read answered view %s (%d tokens), files/read %s (%d)", viaMCP.View, viaMCP.Tokens, small.View, small.Tokens), ""
	}
	return true, fmt.Sprintf("a %d-byte file read in full within 400 tokens came back as view %s (%d tokens) saying so (%q); "+
		"with room, the whole file; nas_read over MCP answered the same", len(body), small.View, small.Tokens, small.Note), ""
}

// checkEvidence is L2.5: a pointer taken from a read still dereferences
// to the same lines, and verifies, after the file changed and the branch
// moved; a wrong hash does not verify.
func checkEvidence(ctx context.Context, r *run) (bool, string, string) {
	const path = "shared/launch/evidence.md"
	body := "# Evidence\n\nline three\nline four\nline five\n"
	lc, l, err := r.runWith(ctx, map[string]string{path: body})
	if err != nil {
		return false, err.Error(), ""
	}
	rd, err := lc.api.ReadFile(ctx, apiv1.FileReadRequest{Repo: r.repo, Path: path, View: apiv1.ViewLines, Range: &apiv1.LineRange{StartLine: 3, EndLine: 4}})
	if err != nil || len(rd.Evidence) != 1 {
		return false, fmt.Sprintf("a lines read answered %v, evidence %v", err, rd), ""
	}
	ev := rd.Evidence[0]
	if err := lc.put(ctx, r.repo, path, "# Evidence\n\nrewritten\n"); err != nil {
		return false, err.Error(), ""
	}
	if err := lc.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: l.Branch, Message: "rewrite"}, nil); err != nil {
		return false, err.Error(), ""
	}
	var d apiv1.FileDereferenceResponse
	if err := lc.api.Do(ctx, apiv1.FileDereferenceRequest{Pointer: ev.Pointer}, &d); err != nil {
		return false, "dereference after the branch moved: " + err.Error(), ""
	}
	if d.Content != "line three\nline four\n" || d.SHA256 != ev.SHA256 {
		return false, fmt.Sprintf("%s dereferences to %q (%s) after the branch moved", ev.Pointer, d.Content, d.SHA256), ""
	}
	var ok, bad apiv1.FileVerifyResponse
	if err := lc.api.Do(ctx, apiv1.FileVerifyRequest(ev), &ok); err != nil || !ok.Valid {
		return false, fmt.Sprintf("verify of a true pointer: %v %v", ok, err), ""
	}
	wrong := strings.Repeat("0", 64)
	if err := lc.api.Do(ctx, apiv1.FileVerifyRequest{Pointer: ev.Pointer, SHA256: wrong}, &bad); err != nil || bad.Valid {
		return false, fmt.Sprintf("verify of a wrong hash: %v %v", bad, err), ""
	}
	return true, ev.Pointer + " still names its two lines after the file was rewritten and committed; a wrong hash does not verify", ""
}

// callMCP calls tool on an MCP server acting as lease l, as an agent's
// host would, and decodes its structured answer into out.
func callMCP(ctx context.Context, lc *principal, l apiv1.Lease, tool string, args, out any) error {
	s, err := mcpserver.New(mcpserver.Options{Client: lc.api, Repo: l.Repo, Branch: l.Branch})
	if err != nil {
		return err
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "nas-conformance", Version: "0.2"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				return fmt.Errorf("%s", t.Text)
			}
		}
		return fmt.Errorf("%s failed", tool)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// homeRun issues a run lease that may also write its role's Agent Home,
// and remembers two notes there over MCP, the second superseding the
// first; it answers the lease and the notes.
func (r *run) homeRun(ctx context.Context) (*principal, apiv1.Lease, [2]apiv1.MemoryRememberResponse, error) {
	var notes [2]apiv1.MemoryRememberResponse
	lc, l, err := r.runLease(ctx, func(q *apiv1.LeaseCreateRequest) { q.Paths = append(q.Paths, "agents/"+r.role+"/**") })
	if err != nil {
		return nil, l, notes, err
	}
	args := map[string]any{"kind": "semantic", "subject": "customer/acme", "body": "Acme renewed for 12 months; the champion is Dana."}
	if err := callMCP(ctx, lc, l, "nas_remember", args, &notes[0]); err != nil {
		return nil, l, notes, fmt.Errorf("nas_remember: %w", err)
	}
	args = map[string]any{"kind": "semantic", "subject": "customer/acme", "supersedes": []string{notes[0].Note.ID},
		"body": "Acme renewed for 24 months; the champion moved from Dana to Luis."}
	if err := callMCP(ctx, lc, l, "nas_remember", args, &notes[1]); err != nil {
		return nil, l, notes, fmt.Errorf("nas_remember: %w", err)
	}
	return lc, l, notes, nil
}

// recallTests is a Home's golden recall tests: three queries that must
// find the superseding note first, and one that expects the superseded
// note, which recall must leave out (so the runner must fail that case).
func recallTests(notes [2]apiv1.MemoryRememberResponse) string {
	cur, old := notes[1].Note.ID, notes[0].Note.ID
	return fmt.Sprintf("- query: acme champion\n  expect: [%s]\n  top_k: 1\n- query: Luis\n  expect: [%s]\n  top_k: 1\n"+
		"- query: renewed months\n  expect: [%s]\n  top_k: 1\n- query: Dana\n  expect: [%s]\n", cur, cur, cur, old)
}

// recallPasses runs the Home's recall tests with memory/test and checks
// the verdicts: the first three pass, the last fails missing the
// superseded note.
func recallPasses(ctx context.Context, lc *principal, repo string, notes [2]apiv1.MemoryRememberResponse) error {
	var out apiv1.MemoryTestResponse
	if err := lc.api.Do(ctx, apiv1.MemoryTestRequest{Repo: repo}, &out); err != nil {
		return fmt.Errorf("memory/test: %w", err)
	}
	if len(out.Cases) != 4 {
		return fmt.Errorf("memory/test ran %d cases of 4", len(out.Cases))
	}
	for _, c := range out.Cases[:3] {
		if !c.Pass {
			return fmt.Errorf("recall %q returned %v, not %s first", c.Query, c.Got, c.Expect[0])
		}
	}
	if last := out.Cases[3]; last.Pass || len(last.Missing) != 1 || last.Missing[0] != notes[0].Note.ID {
		return fmt.Errorf("recall %q should miss the superseded note %s; the case says pass=%v missing=%v", last.Query, notes[0].Note.ID, last.Pass, last.Missing)
	}
	return nil
}

// checkRecallRebuilt is L2.1: golden recall tests pass, and pass again
// after every index of the repository is deleted and rebuilt.
func checkRecallRebuilt(ctx context.Context, r *run) (bool, string, string) {
	lc, l, notes, err := r.homeRun(ctx)
	if err != nil {
		return false, err.Error(), ""
	}
	if err := lc.put(ctx, r.repo, "agents/"+r.role+"/recall-tests.yaml", recallTests(notes)); err != nil {
		return false, "write recall-tests.yaml: " + err.Error(), ""
	}
	if err := lc.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: l.Branch, Message: "recall tests"}, nil); err != nil {
		return false, "commit recall-tests.yaml: " + err.Error(), ""
	}
	if err := recallPasses(ctx, lc, r.repo, notes); err != nil {
		return false, "before the rebuild: " + err.Error(), ""
	}
	if err := r.owner.api.Do(ctx, apiv1.IndexDeleteRequest{Repo: r.repo}, nil); err != nil {
		return false, "index/delete: " + err.Error(), ""
	}
	var st apiv1.IndexResponse
	if err := r.owner.api.Do(ctx, apiv1.IndexStatusRequest{Repo: r.repo}, &st); err != nil || len(st.Indexes) != 0 {
		return false, fmt.Sprintf("after index/delete the status lists %d indexes (%v)", len(st.Indexes), err), ""
	}
	if err := r.owner.api.Do(ctx, apiv1.IndexRebuildRequest{Repo: r.repo, Branch: l.Branch}, nil); err != nil {
		return false, "index/rebuild: " + err.Error(), ""
	}
	if err := recallPasses(ctx, lc, r.repo, notes); err != nil {
		return false, "after deleting and rebuilding the index: " + err.Error(), ""
	}
	return true, "the Home's recall-tests.yaml (memory/test) passes, failing only the case that expects a superseded note, and does again after every index was deleted and rebuilt", ""
}

// checkPlainNotes is L2.2: a note nas_remember wrote is a plain Markdown
// file with its front matter, read with a plain S3 GET.
func checkPlainNotes(ctx context.Context, r *run) (bool, string, string) {
	lc, _, notes, err := r.homeRun(ctx)
	if err != nil {
		return false, err.Error(), ""
	}
	body, err := lc.get(ctx, r.repo, notes[1].Path)
	if err != nil {
		return false, "GET " + notes[1].Path + ": " + err.Error(), ""
	}
	for _, want := range []string{"---\n", "kind: semantic", "subject: customer/acme", notes[0].Note.ID, "the champion moved from Dana to Luis"} {
		if !strings.Contains(body, want) {
			return false, fmt.Sprintf("%s read over S3 lacks %q:\n%s", notes[1].Path, want, body), ""
		}
	}
	return true, notes[1].Path + " is a Markdown file with its front matter (kind, subject, supersedes), read with a plain S3 GET", ""
}

// checkRecipes is L2.3: the derivatives the gateway makes say how and
// from what: the search index its recipe and the commit it covers, a
// budgeted read the commit it was made from and that it is not
// generated.
func checkRecipes(ctx context.Context, r *run) (bool, string, string) {
	const path = "shared/launch/recipe.md"
	lc, _, err := r.runWith(ctx, map[string]string{path: "# Recipe\n\nthe index says how it was made\n"})
	if err != nil {
		return false, err.Error(), ""
	}
	var sr apiv1.SearchQueryResponse
	if err := lc.api.Do(ctx, apiv1.SearchQueryRequest{Repo: r.repo, Query: "index made"}, &sr); err != nil {
		return false, "search/query: " + err.Error(), ""
	}
	ix := sr.Index
	if ix.Recipe.Indexer == "" || ix.Recipe.Version == "" || len(ix.Recipe.Settings) == 0 || ix.Commit != sr.Commit || ix.Files == 0 || len(sr.Hits) == 0 {
		return false, fmt.Sprintf("the search index reports recipe %+v, commit %s of %s, %d files, %d hits", ix.Recipe, ix.Commit, sr.Commit, ix.Files, len(sr.Hits)), ""
	}
	rd, err := lc.api.ReadFile(ctx, apiv1.FileReadRequest{Repo: r.repo, Path: path, View: apiv1.ViewOutline})
	if err != nil || rd.Commit != sr.Commit || rd.Generated {
		return false, fmt.Sprintf("an outline reports commit %v (want %s), generated %v: %v", rd, sr.Commit, rd != nil && rd.Generated, err), ""
	}
	return true, fmt.Sprintf("the search index names its recipe (%s %s, %d settings) and inputs (commit %s, %d files); outlines name their commit and are not generated",
		ix.Recipe.Indexer, ix.Recipe.Version, len(ix.Recipe.Settings), ix.Commit[:12], ix.Files), ""
}
