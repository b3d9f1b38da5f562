package apiv1

import "time"

// Attached sources (owner operations). No answer ever carries a source's
// credentials.

// Source is an attached bucket or folder and its last attach or refresh.
type Source struct {
	ID          string `json:"id"`
	Repo        string `json:"repo"`
	Branch      string `json:"branch"`
	Prefix      string `json:"prefix"`
	URL         string `json:"url"`
	Endpoint    string `json:"endpoint,omitempty"`
	Region      string `json:"region,omitempty"`
	Versioned   bool   `json:"versioned"`
	Credentials bool   `json:"credentials"`
	// WithMetadata: new and re-pinned objects carry the remote's content
	// type and user metadata.
	WithMetadata bool `json:"with_metadata"`
	// Args are an adapter's (exec:) arguments.
	Args       []string  `json:"args,omitempty"`
	State      string    `json:"state"` // importing, refreshing, ready, failed
	Error      string    `json:"error,omitempty"`
	Listed     int64     `json:"listed"`
	Added      int64     `json:"added"`
	Changed    int64     `json:"changed"`
	Removed    int64     `json:"removed"`
	Kept       int64     `json:"kept"`
	Skipped    int64     `json:"skipped"`
	Base       string    `json:"base"`
	Commit     string    `json:"commit"`
	Commits    int       `json:"commits"`
	Created    time.Time `json:"created"`
	Synced     time.Time `json:"synced"`
	AttachedBy string    `json:"attached_by,omitempty"`
}

// SourceAddRequest attaches URL (s3://BUCKET/PREFIX or dir:/PATH) at
// Prefix of Branch; Wait answers when the attach has ended.
type SourceAddRequest struct {
	Repo         string `json:"repo"`
	Branch       string `json:"branch,omitempty"`
	Prefix       string `json:"prefix,omitempty"`
	URL          string `json:"url"`
	Endpoint     string `json:"endpoint,omitempty"`
	Region       string `json:"region,omitempty"`
	AccessKey    string `json:"access_key,omitempty"`
	SecretKey    string `json:"secret_key,omitempty"`
	SessionToken string `json:"session_token,omitempty"`
	VirtualHost  bool   `json:"virtual_host,omitempty"`
	Wait         bool   `json:"wait,omitempty"`
	// WithMetadata asks each new or re-pinned object for its content type
	// and user metadata (one HEAD each), at attach and at every refresh.
	WithMetadata bool `json:"with_metadata,omitempty"`
	// Args are the arguments an adapter (exec:/PATH) is run with; they are
	// shown in the source's description, so never a password.
	Args []string `json:"args,omitempty"`
}

// SourceGetRequest names a source.
type SourceGetRequest struct {
	ID string `json:"id"`
}

// SourceListRequest lists a repository's sources.
type SourceListRequest struct {
	Repo string `json:"repo,omitempty"`
	Page
}

// SourceRefreshRequest lists a source again and commits what changed.
type SourceRefreshRequest struct {
	ID   string `json:"id"`
	Wait bool   `json:"wait,omitempty"`
}

// SourceRemoveRequest detaches a source; Evict drops what was fetched.
type SourceRemoveRequest struct {
	ID    string `json:"id"`
	Evict bool   `json:"evict,omitempty"`
}

// SourceResponse answers add, get and refresh; a failed attach waited
// for is the error SourceSyncFailed with the source in its details.
type SourceResponse struct {
	Source Source `json:"source"`
}

// SourceListResponse answers source/list.
type SourceListResponse struct {
	Sources    []Source `json:"sources"`
	NextCursor string   `json:"next_cursor"`
}

// SourceRemoveResponse answers source/remove.
type SourceRemoveResponse struct {
	Removed string `json:"removed"`
	Source  Source `json:"source"`
}

// Op implements Request.
func (SourceAddRequest) Op() string { return "source/add" }

// Op implements Request.
func (SourceGetRequest) Op() string { return "source/get" }

// Op implements Request.
func (SourceListRequest) Op() string { return "source/list" }

// Op implements Request.
func (SourceRefreshRequest) Op() string { return "source/refresh" }

// Op implements Request.
func (SourceRemoveRequest) Op() string { return "source/remove" }

// SourcePrefetchRequest starts making a source's entries local in the
// background (or, with Cancel, stops the prefetch under way). Prefix
// narrows it to repository keys under it; Parallel is the entries fetched
// at once (default 4, at most 64); BytesPerSecond bounds the rate over
// all of them (0: no limit). A prefetch under way is answered instead of
// a second.
type SourcePrefetchRequest struct {
	ID             string `json:"id"`
	Prefix         string `json:"prefix,omitempty"`
	Parallel       int    `json:"parallel,omitempty"`
	BytesPerSecond int64  `json:"bytes_per_second,omitempty"`
	Cancel         bool   `json:"cancel,omitempty"`
}

// SourcePrefetch is a prefetch job: what it was asked and how far it got.
type SourcePrefetch struct {
	Source         string `json:"source"`
	State          string `json:"state"` // running, done, failed, interrupted, cancelled
	Error          string `json:"error,omitempty"`
	Prefix         string `json:"prefix"`
	Parallel       int    `json:"parallel"`
	BytesPerSecond int64  `json:"bytes_per_second"`
	// Totals of the entries it covers, counted before fetching.
	TotalEntries int64 `json:"total_entries"`
	TotalBytes   int64 `json:"total_bytes"`
	// Entries handled so far: already local, or fetched (fetched_bytes
	// verified and stored; received_bytes also counts fetches under way
	// or failed).
	Entries        int64 `json:"entries"`
	LocalEntries   int64 `json:"local_entries"`
	LocalBytes     int64 `json:"local_bytes"`
	FetchedEntries int64 `json:"fetched_entries"`
	FetchedBytes   int64 `json:"fetched_bytes"`
	ReceivedBytes  int64 `json:"received_bytes"`
	// Entries whose remote object changed (drifted) or that the remote
	// could not serve, with the first few keys of each.
	Drifted         int64      `json:"drifted"`
	Unavailable     int64      `json:"unavailable"`
	DriftedKeys     []string   `json:"drifted_keys"`
	UnavailableKeys []string   `json:"unavailable_keys"`
	Started         time.Time  `json:"started"`
	Ended           *time.Time `json:"ended"` // null while it runs
	StartedBy       string     `json:"started_by,omitempty"`
}

// SourcePrefetchResponse answers source/prefetch.
type SourcePrefetchResponse struct {
	Prefetch SourcePrefetch `json:"prefetch"`
}

// SourceStatusRequest asks how much of a source is local. NoScan skips
// counting (which reads the side index once per entry) and answers only
// the prefetch job.
type SourceStatusRequest struct {
	ID     string `json:"id"`
	NoScan bool   `json:"no_scan,omitempty"`
}

// SourceStatus is how much of a source is local: its lazy entries on its
// branch and their bytes, in all and local (counted when Scanned), and
// its prefetch under way or last (null: never prefetched).
type SourceStatus struct {
	Source       string          `json:"source"`
	Repo         string          `json:"repo"`
	Branch       string          `json:"branch"`
	Prefix       string          `json:"prefix"`
	State        string          `json:"state"` // the attachment's
	Scanned      bool            `json:"scanned"`
	Entries      int64           `json:"entries"`
	Bytes        int64           `json:"bytes"`
	LocalEntries int64           `json:"local_entries"`
	LocalBytes   int64           `json:"local_bytes"`
	Prefetch     *SourcePrefetch `json:"prefetch"`
}

// SourceStatusResponse answers source/status.
type SourceStatusResponse struct {
	Status SourceStatus `json:"status"`
}

// Op implements Request.
func (SourcePrefetchRequest) Op() string { return "source/prefetch" }

// Op implements Request.
func (SourceStatusRequest) Op() string { return "source/status" }

// SourcePushRequest writes the committed changes of branch From under the
// attachment's prefix back to its S3 source (owner only; From cannot be
// the attachment's own branch). Paths are globs of repository keys (none:
// every change); DryRun lists what would be written and writes nothing.
type SourcePushRequest struct {
	ID     string   `json:"id"`
	From   string   `json:"from"`
	Paths  []string `json:"paths,omitempty"`
	DryRun bool     `json:"dry_run,omitempty"`
}

// Op implements Request.
func (SourcePushRequest) Op() string { return "source/push" }

// SourcePushAction is what a push did, or would do, with one key.
type SourcePushAction struct {
	Key    string `json:"key"`
	Op     string `json:"op"`     // put or delete
	Kind   string `json:"kind"`   // the change: A added, M modified, D deleted
	Result string `json:"result"` // written, would write, conflict, skipped, failed
	Reason string `json:"reason,omitempty"`
	ETag   string `json:"etag,omitempty"` // the remote's new ETag of a written put
}

// SourcePushResponse answers source/push: every key it considered,
// written and conflicting counts, and the commit that pins what was
// written on the attachment's branch.
type SourcePushResponse struct {
	Source    string             `json:"source"`
	From      string             `json:"from"`
	DryRun    bool               `json:"dry_run,omitempty"`
	Actions   []SourcePushAction `json:"actions"`
	Written   int                `json:"written"`
	Conflicts int                `json:"conflicts"`
	Commit    string             `json:"commit,omitempty"`
	// Digest binds the plan: an approval or a record names exactly what
	// is written.
	Digest string `json:"digest"`
}

// SourcePushAskRequest is a lease's request that the changes of its
// branch be written back to a source: the source attached at Prefix of
// the lease's repository (or the attachment ID), its changes under it
// that Paths (globs) match, each one the lease may write. It waits at a
// gate (op source.push, egress) whose card lists the plan; only the
// owner's approval runs it, and a plan that changed meanwhile voids it.
type SourcePushAskRequest struct {
	Repo   string   `json:"repo,omitempty"` // the lease's (when given, it must be)
	ID     string   `json:"id,omitempty"`
	Prefix string   `json:"prefix,omitempty"`
	Paths  []string `json:"paths,omitempty"`
	Reason string   `json:"reason"`
}

// Op implements Request.
func (SourcePushAskRequest) Op() string { return "source/push-request" }
