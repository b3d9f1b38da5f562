package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
)

// Agent memory: nas_remember writes a note into the lease's role's Home
// on the branch (memory/remember), nas_recall finds notes there
// (memory/recall). Notes are plain Markdown files; these tools only
// spare an agent the front matter.

// RememberInput is nas_remember's input.
type RememberInput struct {
	Kind       string   `json:"kind" jsonschema:"episodic, semantic, procedural or preference"`
	Subject    string   `json:"subject" jsonschema:"what the note is about, such as customer/acme"`
	Body       string   `json:"body" jsonschema:"the note's text (Markdown)"`
	Sources    []string `json:"sources,omitempty" jsonschema:"evidence pointers nas://REPO/PATH@COMMIT#Lx-Ly the note rests on"`
	Confidence *float64 `json:"confidence,omitempty" jsonschema:"0 to 1"`
	ValidFrom  string   `json:"valid_from,omitempty" jsonschema:"when the fact became true (RFC 3339; default now)"`
	ValidTo    string   `json:"valid_to,omitempty" jsonschema:"when it stops being true, if known"`
	Supersedes []string `json:"supersedes,omitempty" jsonschema:"IDs of notes this one replaces (they stay, marked superseded)"`
	Intent     string   `json:"intent,omitempty" jsonschema:"why: the commit message"`
}

// RecallInput is nas_recall's input.
type RecallInput struct {
	Query             string `json:"query" jsonschema:"words to find in the Home's notes"`
	Limit             int    `json:"limit,omitempty" jsonschema:"most notes to answer"`
	BudgetTokens      int    `json:"budget_tokens,omitempty" jsonschema:"token budget of the note bodies"`
	IncludeSuperseded bool   `json:"include_superseded,omitempty" jsonschema:"also notes a newer one superseded"`
	IncludeQuarantine bool   `json:"include_quarantine,omitempty" jsonschema:"also recall quarantined notes a tainted session wrote (marked; never autoloaded)"`
}

// registerMemory adds nas_remember and nas_recall to s.
func (t *tools) registerMemory(s *mcp.Server) {
	in := inferSchema[RememberInput]()
	in.Properties["kind"].Enum = []any{apiv1.KindEpisodic, apiv1.KindSemantic, apiv1.KindProcedural, apiv1.KindPreference}
	mcp.AddTool(s, &mcp.Tool{Name: "nas_remember", InputSchema: in,
		Description: "Write a note (Markdown with front matter: kind, subject, sources, confidence, validity) into this role's " +
			"Agent Home on the branch, and commit it. A new fact supersedes old notes instead of overwriting them."}, t.remember)
	mcp.AddTool(s, &mcp.Tool{Name: "nas_recall", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Description: "Recall the notes of this role's Agent Home that match query, best first, within budget_tokens: each with its " +
			"sources, review state (quarantined notes are unreviewed) and evidence pointer; superseded notes are left out."}, t.recall)
}

func (t *tools) remember(ctx context.Context, _ *mcp.CallToolRequest, in RememberInput) (*mcp.CallToolResult, apiv1.MemoryRememberResponse, error) {
	req := apiv1.MemoryRememberRequest{Repo: t.repo, Branch: t.branch, Kind: in.Kind, Subject: in.Subject, Body: in.Body,
		Sources: in.Sources, Confidence: in.Confidence, ValidFrom: in.ValidFrom, ValidTo: in.ValidTo, Supersedes: in.Supersedes, Intent: in.Intent}
	var out apiv1.MemoryRememberResponse
	if err := t.c.Do(ctx, req, &out); err != nil {
		return nil, out, refusal("remember", err)
	}
	return nil, out, nil
}

func (t *tools) recall(ctx context.Context, _ *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, apiv1.MemoryRecallResponse, error) {
	req := apiv1.MemoryRecallRequest{Repo: t.repo, Branch: t.branch, Query: in.Query, Limit: in.Limit, BudgetTokens: in.BudgetTokens,
		IncludeSuperseded: in.IncludeSuperseded, IncludeQuarantine: in.IncludeQuarantine}
	var out apiv1.MemoryRecallResponse
	if err := t.c.Do(ctx, req, &out); err != nil {
		return nil, out, refusal("recall "+in.Query, err)
	}
	if out.Notes == nil {
		out.Notes = []apiv1.RecalledNote{}
	}
	return nil, out, nil
}
