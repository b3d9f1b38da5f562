package apiv1

import "time"

// Attached sources (owner operations). No answer ever carries a source's
// credentials.

// Source is an attached bucket or folder and its last attach or refresh.
type Source struct {
	ID          string    `json:"id"`
	Repo        string    `json:"repo"`
	Branch      string    `json:"branch"`
	Prefix      string    `json:"prefix"`
	URL         string    `json:"url"`
	Endpoint    string    `json:"endpoint,omitempty"`
	Region      string    `json:"region,omitempty"`
	Versioned   bool      `json:"versioned"`
	Credentials bool      `json:"credentials"`
	State       string    `json:"state"` // importing, refreshing, ready, failed
	Error       string    `json:"error,omitempty"`
	Listed      int64     `json:"listed"`
	Added       int64     `json:"added"`
	Changed     int64     `json:"changed"`
	Removed     int64     `json:"removed"`
	Kept        int64     `json:"kept"`
	Skipped     int64     `json:"skipped"`
	Base        string    `json:"base"`
	Commit      string    `json:"commit"`
	Commits     int       `json:"commits"`
	Created     time.Time `json:"created"`
	Synced      time.Time `json:"synced"`
	AttachedBy  string    `json:"attached_by,omitempty"`
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
