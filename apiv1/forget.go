package apiv1

import "time"

// Cascade forget (forget/run) and legal holds (hold/set, hold/list,
// hold/delete): the owner's. Forgetting removes the selected files and
// what was derived from them (notes that cite them or share the subject,
// the search index) from every branch, and reports what it did and did
// not cover; a legal hold on any of those keys blocks it.

// Hold is a legal hold on the keys Glob matches.
type Hold struct {
	Glob   string    `json:"glob"`
	Reason string    `json:"reason,omitempty"`
	SetAt  time.Time `json:"set_at"`
}

// HoldSetRequest places a hold (or replaces the one on the same glob).
type HoldSetRequest struct {
	Repo   string `json:"repo"`
	Glob   string `json:"glob"`
	Reason string `json:"reason,omitempty"`
}

// HoldListRequest lists a repository's holds.
type HoldListRequest struct {
	Repo string `json:"repo"`
}

// HoldDeleteRequest lifts the hold on Glob.
type HoldDeleteRequest struct {
	Repo string `json:"repo"`
	Glob string `json:"glob"`
}

// HoldsResponse is a repository's holds.
type HoldsResponse struct {
	Repo  string `json:"repo"`
	Holds []Hold `json:"holds"`
}

// ForgetRequest forgets the files Paths (globs) match, and the notes that
// cite them or are about Subject, on every branch of Repo: it removes
// them from the branches, rewrites the history that still holds them
// (every commit, checkpoint and deleted branch; old commit IDs stop
// resolving) and collects garbage, so their bytes leave the store.
// KeepHistory only removes them from the branches' heads (the history
// before keeps them). DryRun reports what would be done and does nothing.
type ForgetRequest struct {
	Repo        string   `json:"repo"`
	Paths       []string `json:"paths"`
	Subject     string   `json:"subject,omitempty"`
	KeepHistory bool     `json:"keep_history,omitempty"`
	DryRun      bool     `json:"dry_run,omitempty"`
	// Domains are key domains of sensitive content to destroy whole:
	// every version sealed under one, in every commit, checkpoint,
	// export or backup, can no longer be read. The domains of sensitive
	// files the paths forget are destroyed without being named when no
	// other file at a head still uses them.
	Domains []string `json:"domains,omitempty"`
}

// ForgetSelector is what a forget asked for.
type ForgetSelector struct {
	Paths   []string `json:"paths"`
	Subject string   `json:"subject,omitempty"`
}

// ForgetDerived counts the derivatives removed.
type ForgetDerived struct {
	Notes   int `json:"notes"`
	Indexes int `json:"indexes"`
}

// ForgetOutcome is the body of the specification's forget report.
type ForgetOutcome struct {
	FilesRemoved   int           `json:"files_removed"`
	DerivedRemoved ForgetDerived `json:"derived_removed"`
	History        string        `json:"history"`
	KeysDestroyed  []string      `json:"keys_destroyed"`
	// KeysKept are the domains of forgotten sensitive files that were
	// not destroyed, and why (other files still use them).
	KeysKept         []string `json:"keys_kept,omitempty"`
	SnapshotsPending []string `json:"snapshots_pending"`
	NotCovered       []string `json:"not_covered"`
	// Collected is what the collection after a history rewrite reclaimed.
	Collected *ForgetCollected `json:"collected,omitempty"`
}

// ForgetCollected is what a forget's garbage collection reclaimed: old
// commits, chunks (with their bytes) and bytes scrubbed out of segments
// that stay for other objects.
type ForgetCollected struct {
	Commits       int   `json:"commits"`
	Chunks        int   `json:"chunks"`
	Bytes         int64 `json:"bytes"`
	ScrubbedBytes int64 `json:"scrubbed_bytes"`
}

// ForgetReport is forget-report.json: what was asked, what was done on
// which branches (Removed: the keys), and what was not.
type ForgetReport struct {
	ForgetID       string              `json:"forget_id"`
	Repo           string              `json:"repo"`
	Selector       ForgetSelector      `json:"selector"`
	RetentionClass string              `json:"retention_class"`
	Report         ForgetOutcome       `json:"report"`
	Removed        map[string][]string `json:"removed"`
	Commits        map[string]string   `json:"commits,omitempty"`
	State          string              `json:"state"` // dry_run, done, pending_history, pending_collection (several gateways: the collection was not admitted; nas gc later)
	DryRun         bool                `json:"dry_run,omitempty"`
}

// Op implements Request.
func (HoldSetRequest) Op() string { return "hold/set" }

// Op implements Request.
func (HoldListRequest) Op() string { return "hold/list" }

// Op implements Request.
func (HoldDeleteRequest) Op() string { return "hold/delete" }

// Op implements Request.
func (ForgetRequest) Op() string { return "forget/run" }
