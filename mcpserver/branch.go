package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
)

// The actions of nas_branch.
const (
	branchList       = "list"
	branchCheckpoint = "checkpoint"
	branchRestore    = "restore"
	branchCreate     = "create"
)

// BranchInput is nas_branch's input: what to do and, for checkpoint,
// restore and create, the name.
type BranchInput struct {
	Action  string   `json:"action" jsonschema:"list (the branch, its last commit and checkpoints), checkpoint (commit what is staged and name the commit), restore (go back to a checkpoint; nothing is lost: the current state is committed first and stays in history) or create (fork the branch for a sub-agent, with a child lease on the fork)"`
	Name    string   `json:"name,omitempty" jsonschema:"the checkpoint's name (checkpoint, restore) or the fork's last segment (create: the fork is BRANCH/NAME)"`
	Paths   []string `json:"paths,omitempty" jsonschema:"create: path globs of the child's view (default: this lease's)"`
	Actions []string `json:"actions,omitempty" jsonschema:"create: the child's actions on paths, within this lease's"`
	TTL     string   `json:"ttl,omitempty" jsonschema:"create: the child lease's lifetime such as 30m (at most what is left of this lease)"`
	Purpose string   `json:"purpose,omitempty" jsonschema:"create: why the sub-agent needs the fork (recorded)"`
}

// BranchOutput is nas_branch's answer: the branch and its last commit,
// its checkpoints, what the action made (a checkpoint, a restore's
// commit), and for create the fork and its child lease.
type BranchOutput struct {
	Branch      string             `json:"branch"`
	Head        string             `json:"head,omitempty"`
	Checkpoints []apiv1.Checkpoint `json:"checkpoints"`
	Checkpoint  *apiv1.Checkpoint  `json:"checkpoint,omitempty"`
	Restored    string             `json:"restored_commit,omitempty"`
	Fork        *ChildLease        `json:"fork,omitempty"`
}

// registerBranch adds nas_branch to s.
func (t *tools) registerBranch(s *mcp.Server) {
	in := inferSchema[BranchInput]()
	in.Properties["action"].Enum = []any{branchList, branchCheckpoint, branchRestore, branchCreate}
	mcp.AddTool(s, &mcp.Tool{Name: "nas_branch", InputSchema: in,
		Description: "Save points and forks of the branch this lease works on. checkpoint names the current state " +
			"(staged changes are committed first); restore goes back to a checkpoint with a new commit, so the state before " +
			"stays in history; list shows the last commit and the checkpoints; create forks the branch as BRANCH/NAME and " +
			"issues a child lease on the fork (credentials in the answer, as nas_lease's child) for a sub-agent."}, t.branchTool)
}

func (t *tools) branchTool(ctx context.Context, _ *mcp.CallToolRequest, in BranchInput) (*mcp.CallToolResult, BranchOutput, error) {
	out := BranchOutput{Branch: t.branch}
	if in.Action != branchList && in.Name == "" {
		return nil, out, &toolError{code: apiv1.CodeInvalidArgument, msg: in.Action + " needs a name"}
	}
	var err error
	switch in.Action {
	case branchList:
	case branchCheckpoint:
		err = t.checkpoint(ctx, in.Name, &out)
	case branchRestore:
		err = t.restore(ctx, in.Name, &out)
	case branchCreate:
		err = t.fork(ctx, in, &out)
	default:
		return nil, out, &toolError{code: apiv1.CodeInvalidArgument, msg: fmt.Sprintf("action %q: want list, checkpoint, restore or create", in.Action)}
	}
	if err != nil {
		return nil, out, err
	}
	return nil, out, t.describe(ctx, &out)
}

// checkpoint commits what is staged and names the branch's last commit.
func (t *tools) checkpoint(ctx context.Context, name string, out *BranchOutput) error {
	if _, err := t.commitStaged(ctx, "checkpoint "+name, "commit before checkpointing"); err != nil {
		return err
	}
	var resp apiv1.CheckpointResponse
	if err := t.c.Do(ctx, apiv1.CheckpointCreateRequest{Repo: t.repo, Branch: t.branch, Name: name}, &resp); err != nil {
		return refusal("checkpoint "+name, err)
	}
	out.Checkpoint = &resp.Checkpoint
	return nil
}

// restore commits what is staged (so it stays in history) and goes back
// to checkpoint name.
func (t *tools) restore(ctx context.Context, name string, out *BranchOutput) error {
	if _, err := t.commitStaged(ctx, "before restoring checkpoint "+name, "commit before restoring"); err != nil {
		return err
	}
	var resp apiv1.RestoreResponse
	if err := t.c.Do(ctx, apiv1.CheckpointRestoreRequest{Repo: t.repo, Branch: t.branch, Name: name}, &resp); err != nil {
		return refusal("restore checkpoint "+name, err)
	}
	out.Restored = resp.Commit
	return nil
}

// fork makes BRANCH/NAME with a child lease on it.
func (t *tools) fork(ctx context.Context, in BranchInput, out *BranchOutput) error {
	req := apiv1.LeaseCreateRequest{Repo: t.repo, ForkFrom: t.branch, Branch: t.branch + "/" + in.Name,
		Paths: in.Paths, Actions: in.Actions, TTL: in.TTL, Purpose: in.Purpose}
	var resp apiv1.LeaseResponse
	if err := t.c.Do(ctx, req, &resp); err != nil {
		return refusal("fork "+req.Branch, err)
	}
	out.Fork = &ChildLease{Lease: resp.Lease, Endpoint: t.c.Endpoint()}
	return nil
}

// describe fills in the branch's last commit and its checkpoints.
func (t *tools) describe(ctx context.Context, out *BranchOutput) error {
	var log apiv1.CommitLogResponse
	if err := t.c.Do(ctx, apiv1.CommitLogRequest{Repo: t.repo, Ref: t.branch, Page: apiv1.Page{Limit: 1}}, &log); err != nil {
		return refusal("log "+t.branch, err)
	}
	if len(log.Commits) > 0 {
		out.Head = log.Commits[0].ID
	}
	var cps apiv1.CheckpointListResponse
	if err := t.c.Do(ctx, apiv1.CheckpointListRequest{Repo: t.repo, Branch: t.branch}, &cps); err != nil {
		return refusal("list checkpoints", err)
	}
	out.Checkpoints = cps.Checkpoints
	return nil
}

// commitStaged commits what the run staged on the branch, if anything,
// with message msg: the commit's ID, or "" when nothing was staged. what
// names the step in a refusal.
func (t *tools) commitStaged(ctx context.Context, msg, what string) (string, error) {
	var resp apiv1.CommitResponse
	err := t.c.Do(ctx, apiv1.CommitCreateRequest{Repo: t.repo, Branch: t.branch, Message: msg}, &resp)
	if client.Code(err) == apiv1.CodeNothingToCommit {
		return "", nil
	}
	if err != nil {
		return "", refusal(what, err)
	}
	return resp.Commit.ID, nil
}
