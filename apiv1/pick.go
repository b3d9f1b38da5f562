package apiv1

// Reverting and cherry-picking one commit on a branch.

// PickRequest names the branch that gets a new commit and the commit
// whose changes (against its first parent) it undoes or applies.
type PickRequest struct {
	Repo    string `json:"repo"`
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
	Message string `json:"message,omitempty"`
}

// CommitRevertRequest is commit/revert: a new commit on Branch that
// undoes Commit's changes.
type CommitRevertRequest PickRequest

// CommitCherryPickRequest is commit/cherry-pick: a new commit on Branch
// that applies Commit's changes.
type CommitCherryPickRequest PickRequest

// PickResponse answers commit/revert and commit/cherry-pick. In Result,
// Base is the three-way merge's base (the commit's first parent for a
// cherry-pick, the commit itself for a revert), Ours the branch's head
// before, Theirs the side replayed and Commit the new commit. A conflict
// is the error MergeConflict with the result in its details, as for
// merge/create.
type PickResponse struct {
	Result MergeResult `json:"result"`
}

// Op implements Request.
func (CommitRevertRequest) Op() string { return "commit/revert" }

// Op implements Request.
func (CommitCherryPickRequest) Op() string { return "commit/cherry-pick" }
