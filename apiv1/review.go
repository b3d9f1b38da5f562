package apiv1

import (
	"time"

	"github.com/agentnas/nas/lease"
)

// Merges, proposals, gates, policies, checkpoints and the trash.

// MergeCreateRequest merges From into Into (the owner's direct merge);
// Ours and Theirs resolve conflicts by key glob; DryRun only computes.
type MergeCreateRequest struct {
	Repo    string   `json:"repo"`
	From    string   `json:"from"`
	Into    string   `json:"into"`
	Message string   `json:"message,omitempty"`
	Ours    []string `json:"ours,omitempty"`
	Theirs  []string `json:"theirs,omitempty"`
	DryRun  bool     `json:"dry_run,omitempty"`
}

// Conflict is a key both sides changed differently, with the ETag each
// side has (nil: absent).
type Conflict struct {
	Key        string  `json:"key"`
	BaseETag   *string `json:"base_etag"`
	OursETag   *string `json:"ours_etag"`
	TheirsETag *string `json:"theirs_etag"`
}

// MergeResult is what a merge did (or, dry, would do).
type MergeResult struct {
	Base      string     `json:"base"`
	Ours      string     `json:"ours"`
	Theirs    string     `json:"theirs"`
	Commit    string     `json:"commit,omitempty"`
	Applied   int        `json:"applied"`
	UpToDate  bool       `json:"up_to_date"`
	Conflicts []Conflict `json:"conflicts,omitempty"`
	Changes   []Change   `json:"changes,omitempty"`
}

// MergeCreateResponse answers merge/create; a conflict is the error
// MergeConflict with the result in its details.
type MergeCreateResponse struct {
	Result MergeResult `json:"result"`
}

// ProposeCreateRequest proposes merging Branch (default: the lease's)
// into Into (default: the branch the run was forked from, else main).
// Checks names pre-merge checks to run besides those Into requires.
type ProposeCreateRequest struct {
	Repo   string   `json:"repo"`
	Branch string   `json:"branch,omitempty"`
	Into   string   `json:"into,omitempty"`
	Intent string   `json:"intent,omitempty"`
	Checks []string `json:"checks,omitempty"`
}

// ChangeLine is one change of a proposal's diff.
type ChangeLine struct {
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	OldETag string `json:"old_etag,omitempty"`
	NewETag string `json:"new_etag,omitempty"`
	NewSize int64  `json:"new_size,omitempty"`
}

// Proposal is an Agent PR and what became of it. A lease sees only the
// changes and conflicts of keys in its view.
type Proposal struct {
	ID         string           `json:"proposal_id"`
	Repo       string           `json:"repo"`
	From       string           `json:"from"`
	Into       string           `json:"into"`
	SourceHead string           `json:"source_head"`
	TargetHead string           `json:"target_head"`
	Base       string           `json:"base"`
	Intent     string           `json:"intent,omitempty"`
	Run        string           `json:"run,omitempty"`
	Lease      string           `json:"lease,omitempty"`
	Principal  string           `json:"principal"`
	Counts     map[string]int   `json:"counts"`
	Changes    []ChangeLine     `json:"changes"`
	Digest     string           `json:"diff_sha256"`
	Reads      *ManifestSummary `json:"read_manifest,omitempty"`
	// SessionTaint is the proposing run's taint; GuardReason says why the
	// session invariant held or refused the proposal, when it did.
	SessionTaint []string `json:"session_taint,omitempty"`
	GuardReason  string   `json:"guard_reason,omitempty"`
	Decision     string   `json:"decision"` // merge, gate or refuse
	Rule         string   `json:"rule"`
	Status       string   `json:"status"` // merged, pending, refused, conflict, up_to_date
	GateID       string   `json:"gate_id,omitempty"`
	Merge        string   `json:"merge_commit,omitempty"`
	Conflicts    []string `json:"conflicts,omitempty"`
	// Checks names the pre-merge checks the proposal runs; their results
	// are on its gate's card.
	Checks  []string  `json:"checks,omitempty"`
	Created time.Time `json:"created"`
}

// ProposeCreateResponse answers propose/create.
type ProposeCreateResponse struct {
	Proposal Proposal `json:"proposal"`
}

// CardAction is what a gate asks to do.
type CardAction struct {
	Op           string       `json:"op"`
	From         string       `json:"from"`
	Into         string       `json:"into"`
	FilesChanged int          `json:"files_changed"`
	DiffSHA256   string       `json:"diff_sha256"`
	Changes      []ChangeLine `json:"changes"`
	// Requested and Until are what a request for wider authority (op
	// lease.widen) would grant its lease, and until when.
	Requested []lease.Rule `json:"requested,omitempty"`
	Until     time.Time    `json:"until,omitzero"`
	// Paths and Subject are what a request to forget (op forget) would
	// forget, on approval.
	Paths   []string `json:"paths,omitempty"`
	Subject string   `json:"subject,omitempty"`
}

// CardRisk is what a person weighs.
type CardRisk struct {
	SessionTaint []string `json:"session_taint"`
	Sources      []string `json:"sources"`
	Destructive  bool     `json:"destructive"`
	Egress       bool     `json:"egress"`
	// Guard is why the session invariant (the Rule of Two) sent the
	// proposal to a person, when it did.
	Guard string `json:"guard,omitempty"`
}

// Card is the specification's Gate Card, rendered by the gateway.
type Card struct {
	GateID       string           `json:"gate_id"`
	Run          string           `json:"run"`
	Lease        string           `json:"lease"`
	Action       CardAction       `json:"action"`
	Why          string           `json:"why"`
	Risk         CardRisk         `json:"risk"`
	ReadManifest *ManifestSummary `json:"read_manifest,omitempty"`
	// Checks are the proposal's pre-merge check results as of reading:
	// a required one that has not passed on the card's digest keeps an
	// approval from merging (ChecksPending, ChecksFailed).
	Checks    []CheckResult `json:"checks,omitempty"`
	Options   []string      `json:"options"`
	Default   string        `json:"default"`
	ExpiresAt time.Time     `json:"expires_at"`
}

// Gate is a pending or decided gate.
type Gate struct {
	ID        string    `json:"gate_id"`
	Proposal  string    `json:"proposal_id"`
	Repo      string    `json:"repo"`
	Card      Card      `json:"card"`
	Status    string    `json:"status"` // pending, approved, denied, expired, void
	Created   time.Time `json:"created"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Merge     string    `json:"merge_commit,omitempty"`
	// Paths are the keys a narrowed approval merged (none: the whole
	// card).
	Paths []string `json:"approved_paths,omitempty"`
	// Grants are the grants an approved request for wider authority
	// added to its lease.
	Grants []string `json:"grants,omitempty"`
	// ForgetID names the forget an approved request to forget ran.
	ForgetID string `json:"forget_id,omitempty"`
	// Push is a request to write back to a source, and what the push an
	// approval ran wrote.
	Push *GatePush `json:"push,omitempty"`
}

// GatePush is a request to push at a gate.
type GatePush struct {
	Source    string   `json:"source"`
	From      string   `json:"from"`
	Paths     []string `json:"paths,omitempty"`
	Digest    string   `json:"digest"`
	Written   int      `json:"written"`
	Conflicts int      `json:"conflicts"`
	Commit    string   `json:"commit,omitempty"`
}

// ForgetAskRequest is a lease's request that Paths (globs) and the notes
// about Subject be forgotten: it waits at a gate (op forget), and only
// the owner's approval runs the forget. An agent never forgets.
type ForgetAskRequest struct {
	Paths   []string `json:"paths"`
	Subject string   `json:"subject,omitempty"`
	Reason  string   `json:"reason"`
}

// Op implements Request.
func (ForgetAskRequest) Op() string { return "forget/request" }

// GateListRequest lists gates (a lease: only its own branch's).
type GateListRequest struct {
	Status string `json:"status,omitempty"`
}

// GateListResponse answers gate/list.
type GateListResponse struct {
	Gates []Gate `json:"gates"`
}

// GateGetRequest names a gate.
type GateGetRequest struct {
	GateID string `json:"gate_id"`
}

// GateDecision approves or denies a gate (the owner's alone).
type GateDecision struct {
	GateID string `json:"gate_id"`
	Reason string `json:"reason,omitempty"`
	// Paths, on gate/approve of a merge's card only, narrows the approval
	// to these keys of the card (a key not on it is refused): only they
	// merge, the rest stay on the proposing branch. DiffSHA256 must then
	// be the card's digest, so the approval is bound to the diff the
	// person saw.
	Paths      []string `json:"paths,omitempty"`
	DiffSHA256 string   `json:"diff_sha256,omitempty"`
}

// GateApproveRequest is gate/approve.
type GateApproveRequest GateDecision

// GateDenyRequest is gate/deny.
type GateDenyRequest GateDecision

// GateResponse answers gate/get and the decisions; an approval made void
// is the error ApprovalVoid with the gate in its details.
type GateResponse struct {
	Gate Gate `json:"gate"`
}

// GateDiffRequest asks for the diff of one key of a merge's card, between
// the proposal's target head (old) and source head (new).
type GateDiffRequest struct {
	GateID string `json:"gate_id"`
	Path   string `json:"path"`
}

// MaxDiffBytes is the largest side gate/diff reads to diff as text; a
// larger side is described by size and hash only.
const MaxDiffBytes = 256 << 10

// DiffSide is one side of a key's diff: absent (added or deleted), or its
// size, ETag and SHA-256 (of its bytes, when they were read).
type DiffSide struct {
	Present bool   `json:"present"`
	Size    int64  `json:"size,omitempty"`
	ETag    string `json:"etag,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

// GateDiffResponse answers gate/diff. Text is true when both sides are
// UTF-8 text of at most MaxDiffBytes, and Unified is then their unified
// line diff; otherwise Reason says why there is none (binary, too large,
// sealed) and the sides describe the bytes.
type GateDiffResponse struct {
	Path    string   `json:"path"`
	Kind    string   `json:"kind"` // A, M or D
	Old     DiffSide `json:"old"`
	New     DiffSide `json:"new"`
	Text    bool     `json:"text"`
	Unified string   `json:"unified,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// GateStatsRequest is gate/stats.
type GateStatsRequest struct{}

// GateStats are the queue's numbers.
type GateStats struct {
	Total                 int     `json:"total"`
	Pending               int     `json:"pending"`
	Approved              int     `json:"approved"`
	Denied                int     `json:"denied"`
	Expired               int     `json:"expired"`
	Void                  int     `json:"void"`
	ApprovalRate          float64 `json:"approval_rate"`
	MedianSecondsToDecide float64 `json:"median_seconds_to_decide"`
}

// GateStatsResponse answers gate/stats.
type GateStatsResponse struct {
	Stats GateStats `json:"stats"`
}

// Rule matches proposals and decides them: merge, gate or refuse. Every
// condition that is set must hold.
type Rule struct {
	Name       string   `json:"name"`
	Roles      []string `json:"roles,omitempty"`
	Into       []string `json:"into,omitempty"`
	MaxChanges int      `json:"max_changes,omitempty"`
	Within     []string `json:"within,omitempty"`
	Touches    []string `json:"touches,omitempty"`
	Deletes    *bool    `json:"deletes,omitempty"`
	Then       string   `json:"then"`
}

// Policy is a repository's ordered rules and its session invariant.
type Policy struct {
	Rules []Rule `json:"rules"`
	Guard *Guard `json:"guard,omitempty"`
}

// Guard is the session invariant, the Rule of Two: a lease proposal that
// would complete A (its run read unreviewed external content), B (its
// lease may read SensitiveAt data or above) and C (it merges into a
// protected branch) goes to a gate or is refused, never merged by a rule.
type Guard struct {
	// OnWouldCompleteABC is gate (the default) or refuse.
	OnWouldCompleteABC string `json:"on_would_complete_ABC,omitempty"`
	// Mode is enforce (the default) or log-only: record what would have
	// been done and let the rules decide.
	Mode string `json:"mode,omitempty"`
	// SensitiveAt is B's threshold: private (the default) or secret.
	SensitiveAt string `json:"sensitive_at,omitempty"`
}

// PolicyGetRequest names a repository.
type PolicyGetRequest struct {
	Repo string `json:"repo"`
}

// PolicySetRequest replaces a repository's policy.
type PolicySetRequest struct {
	Repo   string `json:"repo"`
	Policy Policy `json:"policy"`
}

// PolicyResponse answers policy/get and policy/set.
type PolicyResponse struct {
	Policy Policy `json:"policy"`
}

// CheckpointRequest names a checkpoint of a branch (create, restore) or a
// branch's checkpoints (list, Name ""). A lease may name only its own
// branch ("" is it); its restore may change only keys it may write.
type CheckpointRequest struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Name   string `json:"name,omitempty"`
}

// CheckpointCreateRequest is checkpoint/create.
type CheckpointCreateRequest CheckpointRequest

// CheckpointListRequest is checkpoint/list.
type CheckpointListRequest CheckpointRequest

// CheckpointRestoreRequest is checkpoint/restore.
type CheckpointRestoreRequest CheckpointRequest

// Checkpoint names a commit of a branch; By is the lease that named it
// ("" for the owner).
type Checkpoint struct {
	Branch  string    `json:"branch"`
	Name    string    `json:"name"`
	Commit  string    `json:"commit"`
	Created time.Time `json:"created"`
	By      string    `json:"by,omitempty"`
}

// CheckpointResponse answers checkpoint/create.
type CheckpointResponse struct {
	Checkpoint Checkpoint `json:"checkpoint"`
}

// CheckpointListResponse answers checkpoint/list.
type CheckpointListResponse struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// RestoreResponse answers the restores with the commit they made.
type RestoreResponse struct {
	Commit string `json:"commit"`
}

// TrashListRequest lists what merges deleted from protected branches.
type TrashListRequest struct {
	Repo   string `json:"repo"`
	Prefix string `json:"prefix,omitempty"`
}

// TrashEntry is a key a merge deleted from a protected branch.
type TrashEntry struct {
	Repo      string    `json:"repo"`
	Branch    string    `json:"branch"`
	Key       string    `json:"key"`
	DeletedAt time.Time `json:"deleted_at"`
	Commit    string    `json:"commit"`
	ETag      string    `json:"etag"`
	Size      int64     `json:"size"`
}

// TrashListResponse answers trash/list.
type TrashListResponse struct {
	Trash []TrashEntry `json:"trash"`
}

// TrashRestoreRequest restores a key from the trash as a new commit.
type TrashRestoreRequest struct {
	Repo string `json:"repo"`
	Path string `json:"path"`
}

// Op implements Request.
func (MergeCreateRequest) Op() string { return "merge/create" }

// Op implements Request.
func (ProposeCreateRequest) Op() string { return "propose/create" }

// Op implements Request.
func (GateListRequest) Op() string { return "gate/list" }

// Op implements Request.
func (GateGetRequest) Op() string { return "gate/get" }

// Op implements Request.
func (GateApproveRequest) Op() string { return "gate/approve" }

// Op implements Request.
func (GateDenyRequest) Op() string { return "gate/deny" }

// Op implements Request.
func (GateStatsRequest) Op() string { return "gate/stats" }

// Op implements Request.
func (GateDiffRequest) Op() string { return "gate/diff" }

// Op implements Request.
func (PolicyGetRequest) Op() string { return "policy/get" }

// Op implements Request.
func (PolicySetRequest) Op() string { return "policy/set" }

// Op implements Request.
func (CheckpointCreateRequest) Op() string { return "checkpoint/create" }

// Op implements Request.
func (CheckpointListRequest) Op() string { return "checkpoint/list" }

// Op implements Request.
func (CheckpointRestoreRequest) Op() string { return "checkpoint/restore" }

// Op implements Request.
func (TrashListRequest) Op() string { return "trash/list" }

// Op implements Request.
func (TrashRestoreRequest) Op() string { return "trash/restore" }
