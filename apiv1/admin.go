package apiv1

// Maintenance (owner operations) and export/import.

// FsckRequest checks every reference and chunk (admin/fsck).
type FsckRequest struct{}

// ChunkStats describe the chunk store.
type ChunkStats struct {
	Chunks       int   `json:"chunks"`
	Bytes        int64 `json:"bytes"`
	InlineChunks int   `json:"inline_chunks"`
	Segments     int   `json:"segments"`
	SegmentBytes int64 `json:"segment_bytes"`
}

// FsckReport is what fsck checked and found.
type FsckReport struct {
	Repos    int        `json:"repos"`
	Branches int        `json:"branches"`
	Commits  int        `json:"commits"`
	Entries  int        `json:"entries"`
	Lazy     int        `json:"lazy"`
	Chunks   ChunkStats `json:"chunks"`
	Problems []string   `json:"problems"`
}

// FsckResponse answers admin/fsck.
type FsckResponse struct {
	Report FsckReport `json:"report"`
	OK     bool       `json:"ok"`
}

// GCRequest collects garbage now; zero fields take the gateway's
// retention (30 days) and upload expiry (7 days).
type GCRequest struct {
	RetentionSeconds    int64 `json:"retention_seconds,omitempty"`
	UploadExpirySeconds int64 `json:"upload_expiry_seconds,omitempty"`
}

// SweepStats is what a sweep of the chunk store did.
type SweepStats struct {
	Chunks        int   `json:"chunks"`
	Bytes         int64 `json:"bytes"`
	Segments      int   `json:"segments"`
	SegmentBytes  int64 `json:"segment_bytes"`
	LiveChunks    int   `json:"live_chunks"`
	LiveBytes     int64 `json:"live_bytes"`
	SkippedInUse  int   `json:"skipped_in_use"`
	SkippedRecent int   `json:"skipped_recent"`
	// ScrubbedBytes counts the bytes of swept chunks punched out of (or
	// zeroed in) segments that stay for live chunks.
	ScrubbedBytes int64 `json:"scrubbed_bytes"`
}

// GCStats is what a collection reclaimed.
type GCStats struct {
	Commits        int `json:"commits"`
	ExpiredCommits int `json:"expired_commits"`
	Versions       int `json:"versions"`
	Uploads        int `json:"uploads"`
	// DeletedBranches counts deleted branches whose restore window ended.
	DeletedBranches int `json:"deleted_branches"`
	// Trash counts trash entries older than the trash's 7 days, dropped.
	Trash    int        `json:"trash"`
	Nodes    int        `json:"nodes"`
	Contents int        `json:"contents"`
	Chunks   SweepStats `json:"chunks"`
}

// GCResponse answers admin/gc.
type GCResponse struct {
	Stats GCStats `json:"stats"`
}

// RepoExportRequest streams a repository (application/x-nas-dump).
type RepoExportRequest struct {
	Repo string `json:"repo"`
}

// DumpContentType is the media type of export and import streams.
const DumpContentType = "application/x-nas-dump"

// Report is what an export or import did and what it could not carry. It
// also ends a dump stream and is an export's report.json (there without
// Repo and Branches).
type Report struct {
	Repo    string `json:"repo,omitempty"`
	Commits int    `json:"commits"`
	Entries int    `json:"entries"` // entry records (changed keys) written
	Bytes   int64  `json:"bytes"`   // object bytes carried
	// Branches counts the branches an import created.
	Branches int `json:"branches,omitempty"`
	// Uncommitted lists the branches with staged changes, which an export
	// does not carry (commit first to include them).
	Uncommitted []Uncommitted `json:"uncommitted"`
	// VersionRecords and DeleteMarkers count the source's version records;
	// only versions that some exported commit holds are carried.
	VersionRecords int `json:"version_records"`
	DeleteMarkers  int `json:"delete_markers"`
	Trash          int `json:"trash"`
	Uploads        int `json:"open_uploads"`
	// Collected lists parent commits the source no longer has (garbage
	// collected history); the commits naming them are exported as roots.
	Collected []string `json:"collected_parents"`
	// Lazy counts entries exported as references to their source.
	Lazy int `json:"lazy_entries"`
	// NoRef lists branches whose names are not valid Git ref names: they
	// are in branches.json but have no refs/heads ref.
	NoRef []string `json:"branches_without_ref,omitempty"`
}

// Uncommitted is a branch whose staged changes were not exported.
type Uncommitted struct {
	Branch string `json:"branch"`
	Keys   int    `json:"keys"`
}

// RepoImportResponse answers repo/import?repo=NAME once the stream it was
// sent has been loaded.
type RepoImportResponse struct {
	Repo   Repo   `json:"repo"`
	Report Report `json:"report"`
}

// Op implements Request.
func (FsckRequest) Op() string { return "admin/fsck" }

// Op implements Request.
func (GCRequest) Op() string { return "admin/gc" }

// Op implements Request.
func (RepoExportRequest) Op() string { return "repo/export" }
