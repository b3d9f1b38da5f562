package apiv1

import "time"

// Deleted branches: restorable for a retention window (the owner's).

// BranchListDeletedRequest is branch/list-deleted: the restorable
// deleted branches of a repository.
type BranchListDeletedRequest struct {
	Repo string `json:"repo"`
	Page
}

// DeletedBranch is a deleted branch that can still be restored, until
// ExpiresAt.
type DeletedBranch struct {
	Repo      string    `json:"repo"`
	Name      string    `json:"name"`
	Head      string    `json:"head"`
	Base      string    `json:"base,omitempty"`
	DeletedAt time.Time `json:"deleted_at"`
	DeletedBy string    `json:"deleted_by,omitempty"`
	ExpiresAt time.Time `json:"expires_at"`
}

// BranchListDeletedResponse answers branch/list-deleted, by name (the
// cursor is a name) and newest deletion first per name.
type BranchListDeletedResponse struct {
	Deleted    []DeletedBranch `json:"deleted"`
	NextCursor string          `json:"next_cursor"`
}

// BranchRestoreRequest is branch/restore: recreate deleted branch Name at
// its last head, under As when given (a live branch of that name is a
// conflict). The answer is a BranchResponse.
type BranchRestoreRequest struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
	As   string `json:"as,omitempty"`
}

// Op implements Request.
func (BranchListDeletedRequest) Op() string { return "branch/list-deleted" }

// Op implements Request.
func (BranchRestoreRequest) Op() string { return "branch/restore" }
