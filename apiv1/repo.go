package apiv1

import "time"

// Repo describes a repository.
type Repo struct {
	Name          string    `json:"name"`
	DefaultBranch string    `json:"default_branch"`
	Created       time.Time `json:"created"`
}

// Branch describes a branch.
type Branch struct {
	Repo         string     `json:"repo"`
	Name         string     `json:"name"`
	Head         string     `json:"head"`
	Base         string     `json:"base,omitempty"`
	Protected    bool       `json:"protected"`
	Created      time.Time  `json:"created"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	QuotaBytes   int64      `json:"quota_bytes,omitempty"`
	QuotaObjects int64      `json:"quota_objects,omitempty"`
	// Usage is reported for branches with a quota (branch/get).
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is what a branch's current objects add up to.
type Usage struct {
	Bytes   int64 `json:"bytes"`
	Objects int64 `json:"objects"`
}

// Commit describes a commit. Under a lease, commits other runs or the
// owner made show no message and no provenance.
type Commit struct {
	ID         string    `json:"id"`
	Parents    []string  `json:"parents"`
	Tree       string    `json:"tree"`
	Message    string    `json:"message,omitempty"`
	Principal  string    `json:"principal,omitempty"`
	OnBehalfOf string    `json:"on_behalf_of,omitempty"`
	Run        string    `json:"run,omitempty"`
	Lease      string    `json:"lease,omitempty"`
	Time       time.Time `json:"time"`
}

// Change is one A/M/D line of a diff.
type Change struct {
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	OldETag string `json:"old_etag,omitempty"`
	NewETag string `json:"new_etag,omitempty"`
	OldSize *int64 `json:"old_size,omitempty"`
	NewSize *int64 `json:"new_size,omitempty"`
}

// RepoCreateRequest creates a repository; its main is protected unless
// Protected is false.
type RepoCreateRequest struct {
	Repo      string `json:"repo"`
	Protected *bool  `json:"protected,omitempty"`
}

// RepoRequest names a repository (repo/get, repo/delete).
type RepoRequest struct {
	Repo string `json:"repo"`
}

// RepoGetRequest is repo/get.
type RepoGetRequest RepoRequest

// RepoDeleteRequest is repo/delete.
type RepoDeleteRequest RepoRequest

// RepoListRequest is repo/list.
type RepoListRequest struct {
	Page
}

// RepoResponse answers repo/create and repo/get.
type RepoResponse struct {
	Repo Repo `json:"repo"`
}

// RepoListResponse answers repo/list.
type RepoListResponse struct {
	Repos      []Repo `json:"repos"`
	NextCursor string `json:"next_cursor"`
}

// DeletedResponse answers the deletes: what was deleted.
type DeletedResponse struct {
	Deleted string `json:"deleted"`
}

// Limits are a branch's time to live and quotas as requests give them:
// TTL is a duration from now ("0" removes it); a quota of 0 removes it.
type Limits struct {
	TTL          *string `json:"ttl,omitempty"`
	QuotaBytes   *int64  `json:"quota_bytes,omitempty"`
	QuotaObjects *int64  `json:"quota_objects,omitempty"`
}

// BranchCreateRequest forks From (a branch or commit; default main).
type BranchCreateRequest struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
	From string `json:"from,omitempty"`
	Limits
}

// BranchLimitsRequest changes a branch's time to live and quotas.
type BranchLimitsRequest struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
	Limits
}

// BranchRequest names a branch (get, delete, protect, unprotect).
type BranchRequest struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
}

// BranchGetRequest is branch/get.
type BranchGetRequest BranchRequest

// BranchDeleteRequest is branch/delete.
type BranchDeleteRequest BranchRequest

// BranchProtectRequest is branch/protect.
type BranchProtectRequest BranchRequest

// BranchUnprotectRequest is branch/unprotect.
type BranchUnprotectRequest BranchRequest

// BranchListRequest is branch/list.
type BranchListRequest struct {
	Repo string `json:"repo"`
	Page
}

// BranchResponse answers the branch operations.
type BranchResponse struct {
	Branch Branch `json:"branch"`
}

// BranchListResponse answers branch/list.
type BranchListResponse struct {
	Branches   []Branch `json:"branches"`
	NextCursor string   `json:"next_cursor"`
}

// CommitCreateRequest commits a branch's staged changes.
type CommitCreateRequest struct {
	Repo       string `json:"repo"`
	Branch     string `json:"branch"`
	Message    string `json:"message,omitempty"`
	AllowEmpty bool   `json:"allow_empty,omitempty"`
}

// CommitResponse answers commit/create.
type CommitResponse struct {
	Commit Commit `json:"commit"`
}

// CommitLogRequest lists the history of Ref (a branch or commit), newest
// first; Cursor is the commit to continue from.
type CommitLogRequest struct {
	Repo string `json:"repo"`
	Ref  string `json:"ref"`
	Page
}

// CommitLogResponse answers commit/log.
type CommitLogResponse struct {
	Commits    []Commit `json:"commits"`
	NextCursor string   `json:"next_cursor"`
}

// DiffListRequest lists the changes from From to To (branches or
// commits), in key order; Cursor is the last key of the previous page.
type DiffListRequest struct {
	Repo string `json:"repo"`
	From string `json:"from"`
	To   string `json:"to"`
	Page
}

// ChangesListRequest lists what a branch changed since its fork point,
// staged changes included.
type ChangesListRequest struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Page
}

// ChangesResponse answers diff/list and changes/list.
type ChangesResponse struct {
	Changes    []Change `json:"changes"`
	NextCursor string   `json:"next_cursor"`
}

// Op implements Request.
func (RepoCreateRequest) Op() string { return "repo/create" }

// Op implements Request.
func (RepoGetRequest) Op() string { return "repo/get" }

// Op implements Request.
func (RepoDeleteRequest) Op() string { return "repo/delete" }

// Op implements Request.
func (RepoListRequest) Op() string { return "repo/list" }

// Op implements Request.
func (BranchCreateRequest) Op() string { return "branch/create" }

// Op implements Request.
func (BranchLimitsRequest) Op() string { return "branch/limits" }

// Op implements Request.
func (BranchGetRequest) Op() string { return "branch/get" }

// Op implements Request.
func (BranchDeleteRequest) Op() string { return "branch/delete" }

// Op implements Request.
func (BranchProtectRequest) Op() string { return "branch/protect" }

// Op implements Request.
func (BranchUnprotectRequest) Op() string { return "branch/unprotect" }

// Op implements Request.
func (BranchListRequest) Op() string { return "branch/list" }

// Op implements Request.
func (CommitCreateRequest) Op() string { return "commit/create" }

// Op implements Request.
func (CommitLogRequest) Op() string { return "commit/log" }

// Op implements Request.
func (DiffListRequest) Op() string { return "diff/list" }

// Op implements Request.
func (ChangesListRequest) Op() string { return "changes/list" }
