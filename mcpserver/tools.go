package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
)

// tools holds what every tool needs: the gateway client and the lease's
// target. It is read-only after New.
type tools struct {
	c            *client.Client
	repo, branch string
}

// listPage bounds the entries of one nas_list answer: an agent's context
// is the scarce resource, and cursor gives the rest.
const listPage = 500

// register adds the tools of this slice to s.
func (t *tools) register(s *mcp.Server) {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s, &mcp.Tool{Name: "nas_list", Annotations: readOnly,
		Description: fmt.Sprintf("List a directory of the branch: objects (key, size, etag, last_modified, trust labels) and subdirectories. "+
			"Paths outside the lease are invisible. Pages of at most %d entries; pass next_cursor as cursor for more.", listPage)}, t.list)
	mcp.AddTool(s, &mcp.Tool{Name: "nas_read", Annotations: readOnly, InputSchema: readSchema(),
		Description: "Budgeted read of a file at the branch's last commit: the finest view (full, section, lines, " +
			"outline) that fits budget_tokens (about 4 bytes a token), with evidence pointers nas://REPO/PATH@COMMIT#Lx-Ly. " +
			"A coarser view than asked for is returned, never a silent cut."}, t.read)
	mcp.AddTool(s, &mcp.Tool{Name: "nas_write",
		Description: "Write a text file on the branch and commit the branch, with intent as the commit message " +
			"(kept by the flight recorder), so nas_read sees it."}, t.write)
	// Not read-only: with child it issues credentials, which a host must
	// not approve as a mere query.
	mcp.AddTool(s, &mcp.Tool{Name: "nas_lease",
		Description: "The current lease (view, actions, expiry, budgets, grants) and what is left of its budgets (-1: no limit). " +
			"With request, ask a person for wider authority: it waits at a gate (answer: waiting), and an approval adds grants to this lease. " +
			"With child, also issue a narrower child lease (within this one's view, actions and lifetime) for a sub-agent: " +
			"the answer's child holds its live credentials and endpoint, a lease JSON that `nas --lease-json` or `nas mcp` takes; " +
			"they stay valid for the child's ttl, so ask for a short one."}, t.lease)
	mcp.AddTool(s, &mcp.Tool{Name: "nas_propose",
		Description: "Propose merging the branch into into (default: the branch it was forked from): an Agent PR. " +
			"Policy merges it, refuses it, or sends it to a person (status pending: waiting at a gate)."}, t.propose)
	t.registerBranch(s)
	t.registerMemory(s)
	mcp.AddTool(s, searchTool, t.search)
}

// ListInput is nas_list's input.
type ListInput struct {
	Path      string `json:"path" jsonschema:"directory to list; empty or / is the repository root"`
	Recursive bool   `json:"recursive,omitempty" jsonschema:"list every object under path, not only its direct children"`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous answer"`
}

// Entry is one object of a listing.
type Entry struct {
	Key          string    `json:"key"`
	Size         int64     `json:"size"`
	ETag         string    `json:"etag"`
	LastModified time.Time `json:"last_modified"`
	// Labels are the object's trust labels: origin (owner, agent,
	// external), sensitivity (public, private, secret), reviewed.
	Labels *apiv1.Labels `json:"labels,omitempty"`
}

// ListOutput is nas_list's answer: Dirs are the subdirectories (with a
// trailing /) of a listing that is not recursive; NextCursor is "" on the
// last page.
type ListOutput struct {
	Entries    []Entry  `json:"entries"`
	Dirs       []string `json:"dirs"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

func (t *tools) list(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	prefix := key(in.Path)
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	req := apiv1.ObjectListRequest{Repo: t.repo, Branch: t.branch, Prefix: prefix, Page: apiv1.Page{Cursor: in.Cursor, Limit: listPage}}
	if !in.Recursive {
		req.Delimiter = "/"
	}
	var resp apiv1.ObjectListResponse
	if err := t.c.Do(ctx, req, &resp); err != nil {
		return nil, ListOutput{}, refusal("list "+in.Path, err)
	}
	out := ListOutput{Entries: make([]Entry, 0, len(resp.Objects)), Dirs: append([]string{}, resp.Prefixes...), NextCursor: resp.NextCursor}
	for _, o := range resp.Objects {
		out.Entries = append(out.Entries, Entry{Key: o.Key, Size: o.Size, ETag: o.ETag, LastModified: o.ModTime, Labels: o.Labels})
	}
	return nil, out, nil
}

// ReadInput is nas_read's input: files/read's request on the lease's
// branch.
type ReadInput struct {
	Path         string           `json:"path" jsonschema:"file to read"`
	View         string           `json:"view,omitempty" jsonschema:"full (default), section, lines or outline"`
	Range        *apiv1.LineRange `json:"range,omitempty" jsonschema:"lines to read (view lines), 1-based, inclusive"`
	Section      string           `json:"section,omitempty" jsonschema:"for view section: a Markdown heading (Title or Top/Sub), a Go symbol (F, T.M), a Python def or class, a JSON or YAML key"`
	BudgetTokens int              `json:"budget_tokens,omitempty" jsonschema:"token budget of the answer (default 4000)"`
}

func (t *tools) read(ctx context.Context, _ *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, apiv1.FileReadResponse, error) {
	req := apiv1.FileReadRequest{Repo: t.repo, Branch: t.branch, Path: key(in.Path), View: in.View, Range: in.Range,
		Section: in.Section, BudgetTokens: in.BudgetTokens}
	req.ImplyView()
	out, err := t.c.ReadFile(ctx, req)
	if err != nil {
		return nil, apiv1.FileReadResponse{}, refusal("read "+in.Path, err)
	}
	if out.Evidence == nil {
		out.Evidence = []apiv1.Evidence{}
	}
	return nil, *out, nil
}

// WriteInput is nas_write's input.
type WriteInput struct {
	Path    string `json:"path" jsonschema:"file to write (replaced if it exists)"`
	Content string `json:"content" jsonschema:"the file's new content, as text"`
	Intent  string `json:"intent,omitempty" jsonschema:"why: the commit message, kept in the flight recorder"`
}

// WriteOutput is what nas_write stored: the new version and the commit
// that holds it ("" when the branch's last commit already held exactly
// this content).
type WriteOutput struct {
	VersionID string `json:"version_id"`
	ETag      string `json:"etag"`
	Size      int64  `json:"size"`
	Commit    string `json:"commit"`
}

func (t *tools) write(ctx context.Context, _ *mcp.CallToolRequest, in WriteInput) (*mcp.CallToolResult, WriteOutput, error) {
	k := key(in.Path)
	if k == "" || strings.HasSuffix(k, "/") {
		return nil, WriteOutput{}, &toolError{code: apiv1.CodeInvalidArgument, msg: "write " + in.Path + ": path must name a file"}
	}
	body := strings.NewReader(in.Content)
	info, err := t.c.Put(ctx, client.Object{Repo: t.repo, Branch: t.branch, Key: k}, body, body.Size(), client.PutOptions{ContentType: contentType(k)})
	if err != nil {
		return nil, WriteOutput{}, refusal("write "+in.Path, err)
	}
	commit, err := t.commit(ctx, in)
	if err != nil {
		return nil, WriteOutput{}, err
	}
	return nil, WriteOutput{VersionID: info.VersionID, ETag: info.ETag, Size: info.Size, Commit: commit}, nil
}

// commit commits the branch after a write, so the next nas_read (which
// reads commits) sees it and the intent is on record. What else the run
// staged on the branch (through a mount, or S3) goes into the same
// commit, as a mount's fsync would take it.
func (t *tools) commit(ctx context.Context, in WriteInput) (string, error) {
	return t.commitStaged(ctx, cmp.Or(in.Intent, "nas_write "+in.Path), "commit after writing "+in.Path)
}

// contentType guesses a text file's type from its name.
func contentType(k string) string {
	if t := mime.TypeByExtension(path.Ext(k)); t != "" {
		return t
	}
	return "text/plain; charset=utf-8"
}

// LeaseInput is nas_lease's input: the lease is the caller's; Child asks
// for a narrower child lease besides.
type LeaseInput struct {
	Child   *ChildInput  `json:"child,omitempty" jsonschema:"issue a narrower child lease for a sub-agent"`
	Request *WidenInput  `json:"request,omitempty" jsonschema:"ask a person for wider authority (more paths or actions); it waits at a gate and is never granted by asking"`
	Forget  *ForgetInput `json:"forget,omitempty" jsonschema:"ask a person to forget files (and the notes about a subject); it waits at a gate: an agent never forgets"`
}

// ForgetInput is a request to forget.
type ForgetInput struct {
	Paths   []string `json:"paths" jsonschema:"path globs of the files to forget"`
	Subject string   `json:"subject,omitempty" jsonschema:"also the notes about this subject"`
	Reason  string   `json:"reason" jsonschema:"why, shown to the person who decides"`
}

// WidenInput is a request for wider authority.
type WidenInput struct {
	Paths   []string `json:"paths" jsonschema:"path globs wanted"`
	Actions []string `json:"actions" jsonschema:"actions wanted on them (list, read, write, delete, propose)"`
	TTL     string   `json:"ttl,omitempty" jsonschema:"for how long, such as 30m (default: the rest of the lease)"`
	Reason  string   `json:"reason" jsonschema:"why, shown to the person who decides"`
}

// ChildInput is the child lease asked for; the gateway refuses anything
// wider than the caller's lease.
type ChildInput struct {
	Paths   []string `json:"paths" jsonschema:"path globs of the child's view, within this lease's"`
	Actions []string `json:"actions" jsonschema:"actions on them (list, read, write, delete, propose), within this lease's"`
	TTL     string   `json:"ttl,omitempty" jsonschema:"lifetime such as 30m (at most what is left of this lease)"`
	Purpose string   `json:"purpose,omitempty" jsonschema:"why the sub-agent needs it (recorded)"`
}

// LeaseOutput is nas_lease's answer: the current lease (no credentials)
// and its remaining budgets, and the child lease when one was asked for.
type LeaseOutput struct {
	apiv1.LeaseGetResponse
	Child *ChildLease `json:"child,omitempty"`
	// Request is the gate a request for wider authority waits at (or was
	// decided at), and Waiting a line that says what happens next.
	Request *apiv1.Gate `json:"request,omitempty"`
	Waiting string      `json:"waiting,omitempty"`
	// Forget is the gate a request to forget waits at.
	Forget *apiv1.Gate `json:"forget,omitempty"`
}

// ChildLease is an issued child lease as a lease JSON file holds it: its
// credentials and the gateway's endpoint.
type ChildLease struct {
	apiv1.Lease
	Endpoint string `json:"endpoint"`
}

func (t *tools) lease(ctx context.Context, _ *mcp.CallToolRequest, in LeaseInput) (*mcp.CallToolResult, LeaseOutput, error) {
	var out LeaseOutput
	if in.Child != nil {
		var cr apiv1.LeaseResponse
		req := apiv1.LeaseCreateRequest{Paths: in.Child.Paths, Actions: in.Child.Actions, TTL: in.Child.TTL, Purpose: in.Child.Purpose}
		if err := t.c.Do(ctx, req, &cr); err != nil {
			return nil, out, refusal("issue a child lease", err)
		}
		out.Child = &ChildLease{Lease: cr.Lease, Endpoint: t.c.Endpoint()}
	}
	if r := in.Request; r != nil {
		var gr apiv1.GateResponse
		req := apiv1.LeaseWidenRequest{Paths: r.Paths, Actions: r.Actions, TTL: r.TTL, Reason: r.Reason}
		if err := t.c.Do(ctx, req, &gr); err != nil {
			return nil, out, refusal("request wider authority", err)
		}
		out.Request = &gr.Gate
		if gr.Gate.Status == "pending" {
			out.Waiting = fmt.Sprintf("waiting at gate %s for a person's decision; once approved, the paths appear as grants of this lease (call nas_lease to see)", gr.Gate.ID)
		}
	}
	if f := in.Forget; f != nil {
		var gr apiv1.GateResponse
		if err := t.c.Do(ctx, apiv1.ForgetAskRequest{Paths: f.Paths, Subject: f.Subject, Reason: f.Reason}, &gr); err != nil {
			return nil, out, refusal("request forgetting", err)
		}
		out.Forget = &gr.Gate
		out.Waiting = fmt.Sprintf("the request to forget waits at gate %s for a person's decision", gr.Gate.ID)
	}
	if err := t.c.Do(ctx, apiv1.LeaseGetRequest{}, &out.LeaseGetResponse); err != nil {
		return nil, out, refusal("get the lease", err)
	}
	// lease/get never sends credentials; an agent's transcript must not
	// hold the caller's own even if it one day did.
	out.Lease.SecretAccessKey, out.Lease.SessionToken = "", ""
	return nil, out, nil
}

// ProposeInput is nas_propose's input.
type ProposeInput struct {
	Intent string `json:"intent" jsonschema:"what the change is for, shown to the reviewer"`
	Into   string `json:"into,omitempty" jsonschema:"branch to merge into (default: the branch this one was forked from)"`
}

// ProposeOutput is the proposal and, when it waits for a person, a line
// that says so.
type ProposeOutput struct {
	Proposal apiv1.Proposal `json:"proposal"`
	Waiting  string         `json:"waiting,omitempty"`
}

func (t *tools) propose(ctx context.Context, _ *mcp.CallToolRequest, in ProposeInput) (*mcp.CallToolResult, ProposeOutput, error) {
	var resp apiv1.ProposeCreateResponse
	err := t.c.Do(ctx, apiv1.ProposeCreateRequest{Repo: t.repo, Branch: t.branch, Into: in.Into, Intent: in.Intent}, &resp)
	if err != nil {
		return nil, ProposeOutput{}, refusal("propose", err)
	}
	out := ProposeOutput{Proposal: resp.Proposal}
	if out.Proposal.Status == "pending" {
		out.Waiting = fmt.Sprintf("waiting at gate %s for a person's decision; do not propose again", out.Proposal.GateID)
	}
	return nil, out, nil
}
