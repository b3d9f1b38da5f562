package apiv1

import "time"

// The flight recorder as the control API shows it (owner operations).

// Event is one record of the hash-chained log. Hashes are "sha256:" and
// 64 hex digits.
type Event struct {
	Seq          uint64            `json:"seq"`
	Time         time.Time         `json:"time"`
	Kind         string            `json:"kind"`
	Run          string            `json:"run,omitempty"`
	Principal    string            `json:"principal,omitempty"`
	OnBehalfOf   string            `json:"on_behalf_of,omitempty"`
	Lease        string            `json:"lease,omitempty"`
	Purpose      string            `json:"purpose,omitempty"`
	Repo         string            `json:"repo,omitempty"`
	Branch       string            `json:"branch,omitempty"`
	Subject      Subject           `json:"subject,omitzero"`
	Decision     Decision          `json:"decision,omitzero"`
	ReadManifest string            `json:"read_manifest,omitempty"`
	Details      map[string]string `json:"details,omitempty"`
	PrevHash     string            `json:"prev_hash"`
	Hash         string            `json:"hash"`
}

// Subject is what an event acted on.
type Subject struct {
	Path      string `json:"path,omitempty"`
	Commit    string `json:"commit,omitempty"`
	VersionID string `json:"version_id,omitempty"`
}

// Decision is the authorization decision behind an event.
type Decision struct {
	Effect string `json:"effect,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Read is one entry of a run's read manifest (never content).
type Read struct {
	Path          string    `json:"path"`
	Commit        string    `json:"commit,omitempty"`
	VersionID     string    `json:"version_id,omitempty"`
	Offset        int64     `json:"offset"`
	Length        int64     `json:"length"`
	ETag          string    `json:"etag,omitempty"`
	ContentHashes []string  `json:"content_hashes,omitempty"`
	Time          time.Time `json:"time"`
}

// ManifestSummary describes a run's read manifest; Hash chains its pages.
type ManifestSummary struct {
	ID      string    `json:"id"`
	Run     string    `json:"run"`
	Pages   uint64    `json:"pages"`
	Entries uint64    `json:"entries"`
	Bytes   uint64    `json:"bytes"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Hash    string    `json:"hash"`
}

// ManifestExcerpt is a read manifest's summary and its first entries.
type ManifestExcerpt struct {
	ManifestSummary
	Reads     []Read `json:"reads"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Explanation answers "what may have influenced this commit?".
type Explanation struct {
	Repo               string           `json:"repo,omitempty"`
	Commit             string           `json:"commit"`
	Events             []Event          `json:"events"`
	EventsTruncated    bool             `json:"events_truncated,omitempty"`
	Origin             uint64           `json:"origin"`
	Run                string           `json:"run,omitempty"`
	Lease              string           `json:"lease,omitempty"`
	Principal          string           `json:"principal,omitempty"`
	OnBehalfOf         string           `json:"on_behalf_of,omitempty"`
	Purpose            string           `json:"purpose,omitempty"`
	RunEvents          []Event          `json:"run_events,omitempty"`
	RunEventsTotal     int              `json:"run_events_total"`
	RunEventsTruncated bool             `json:"run_events_truncated,omitempty"`
	Gates              []Event          `json:"gates,omitempty"`
	LeaseEvents        []Event          `json:"lease_events,omitempty"`
	ReadManifest       *ManifestExcerpt `json:"read_manifest,omitempty"`
	// Contributors are the other leases whose staged writes the commit
	// folded: a commit the owner made on a run's branch names its runs.
	Contributors []Contributor `json:"contributors,omitempty"`
}

// Contributor is a lease whose writes a commit holds, with how it was
// issued and what its run read.
type Contributor struct {
	Lease        string           `json:"lease"`
	Run          string           `json:"run"`
	LeaseEvents  []Event          `json:"lease_events,omitempty"`
	ReadManifest *ManifestExcerpt `json:"read_manifest,omitempty"`
}

// RecordListRequest lists events, filtered; Cursor is a sequence number.
type RecordListRequest struct {
	Run    string   `json:"run,omitempty"`
	Lease  string   `json:"lease,omitempty"`
	Repo   string   `json:"repo,omitempty"`
	Commit string   `json:"commit,omitempty"`
	Kinds  []string `json:"kinds,omitempty"`
	Page
}

// RecordListResponse answers record/list.
type RecordListResponse struct {
	Records    []Event `json:"records"`
	NextCursor string  `json:"next_cursor"`
}

// RecordExplainRequest names a commit (a unique prefix will do).
type RecordExplainRequest struct {
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit"`
}

// RecordExplainResponse answers record/explain.
type RecordExplainResponse struct {
	Explanation Explanation `json:"explanation"`
}

// RecordVerifyRequest is record/verify.
type RecordVerifyRequest struct{}

// Problem is one thing verify found wrong.
type Problem struct {
	Kind   string `json:"kind"`
	Seq    uint64 `json:"seq,omitempty"`
	Key    string `json:"key,omitempty"`
	Detail string `json:"detail"`
}

// ChainHead is the recorder's last record.
type ChainHead struct {
	Seq  uint64    `json:"seq"`
	Hash string    `json:"hash"`
	Time time.Time `json:"time"`
}

// VerifyReport is what record/verify checked.
type VerifyReport struct {
	Records       uint64    `json:"records"`
	Head          ChainHead `json:"head"`
	LastHash      string    `json:"last_hash"`
	IndexEntries  uint64    `json:"index_entries"`
	Manifests     uint64    `json:"manifests"`
	ManifestPages uint64    `json:"manifest_pages"`
	Problems      uint64    `json:"problems"`
}

// RecordVerifyResponse answers record/verify.
type RecordVerifyResponse struct {
	Report   VerifyReport `json:"report"`
	OK       bool         `json:"ok"`
	Problems []Problem    `json:"problems"`
}

// Op implements Request.
func (RecordListRequest) Op() string { return "record/list" }

// Op implements Request.
func (RecordExplainRequest) Op() string { return "record/explain" }

// Op implements Request.
func (RecordVerifyRequest) Op() string { return "record/verify" }
