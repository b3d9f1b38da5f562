package apiv1

import "time"

// The object operations a file system needs beyond S3. Every one is
// authorized by path; none answers "is chunk H present?".

// Object describes one object version.
type Object struct {
	Key         string            `json:"key"`
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"`
	VersionID   string            `json:"version_id"`
	ModTime     time.Time         `json:"mod_time"`
	ContentType string            `json:"content_type"`
	Meta        map[string]string `json:"meta,omitempty"`
	// Labels are the entry's effective trust labels.
	Labels *Labels `json:"labels,omitempty"`
}

// Chunk is one chunk of an object's content: its BLAKE3 hash (hex) and
// length.
type Chunk struct {
	Hash string `json:"hash"`
	Size uint32 `json:"size"`
}

// Stat is an object with its chunk map, as of Commit: the branch head, or
// the commit the request named as its version.
type Stat struct {
	Object
	Commit string  `json:"commit"`
	Chunks []Chunk `json:"chunks"`
	// Sealed is a sensitive object: its chunks hold sealed bytes, so
	// Chunks is empty and its bytes are read by range (S3 GET), which
	// the gateway opens; a client keeps no copy of them.
	Sealed bool `json:"sealed,omitempty"`
	// Lazy is an object of an attached source not all of whose bytes are
	// local yet: Chunks is empty (a chunk map would mean fetching all of
	// it), and its bytes are read by range (S3 GET), which fetches only
	// the blocks the range touches.
	Lazy bool `json:"lazy,omitempty"`
}

// ObjectRef names an object on a branch ("" branch: the caller's
// default), optionally one version.
type ObjectRef struct {
	Repo      string `json:"repo"`
	Branch    string `json:"branch,omitempty"`
	Key       string `json:"key"`
	VersionID string `json:"version_id,omitempty"`
}

// ObjectStatRequest opens an object: its entry and chunk map, and its
// bytes (Data) when it is at most InlineMax bytes (256 KiB at most; a
// read, charged to a lease).
type ObjectStatRequest struct {
	ObjectRef
	InlineMax int64 `json:"inline_max,omitempty"`
}

// MaxInline bounds ObjectStatRequest.InlineMax.
const MaxInline = 256 << 10

// ObjectStatResponse answers object/stat.
type ObjectStatResponse struct {
	Object Stat `json:"object"`
	// Data is the object's bytes, base64, when asked for and allowed.
	Data *string `json:"data,omitempty"`
}

// Range is a byte range of an object.
type Range struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// MaxRanges bounds the ranges of one object/reads.
const MaxRanges = 10000

// ObjectReadsRequest reports reads a client served from its own chunk
// cache: authorized, charged and recorded as if they had come over S3.
type ObjectReadsRequest struct {
	ObjectRef
	Ranges []Range `json:"ranges"`
}

// ObjectReadsResponse says what was charged and, for a lease, what is
// left.
type ObjectReadsResponse struct {
	Charged   int64      `json:"charged"`
	Remaining *Remaining `json:"remaining,omitempty"`
}

// Segment is a piece of a composed object: a range of an existing
// version (Key, VersionID, Offset, Length), or new bytes (Data, base64).
type Segment struct {
	Key       string `json:"key,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	Offset    int64  `json:"offset,omitempty"`
	Length    int64  `json:"length,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Bounds of object/compose.
const (
	MaxSegments    = 10000
	MaxComposeData = 16 << 20 // new bytes in one compose
)

// ObjectComposeRequest builds a new version of Key from segments, moving
// only the new bytes; IfMatch makes it conditional on the current ETag.
type ObjectComposeRequest struct {
	Repo        string            `json:"repo"`
	Branch      string            `json:"branch,omitempty"`
	Key         string            `json:"key"`
	Segments    []Segment         `json:"segments"`
	ContentType string            `json:"content_type,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	IfMatch     string            `json:"if_match,omitempty"`
}

// ObjectComposeResponse answers object/compose.
type ObjectComposeResponse struct {
	ETag      string `json:"etag"`
	VersionID string `json:"version_id"`
	Size      int64  `json:"size"`
	NewBytes  int64  `json:"new_bytes"`
}

// BatchObject is one object of object/put-batch: a new version of Key
// holding Data (base64 in JSON).
type BatchObject struct {
	Key         string            `json:"key"`
	Data        []byte            `json:"data"`
	ContentType string            `json:"content_type,omitempty"`
	Meta        map[string]string `json:"meta,omitempty"`
	// ChecksumCRC32C, when set, is the CRC32C (base64, as S3's
	// x-amz-checksum-crc32c) Data must have; it is kept as the object's
	// checksum, as PUT keeps it.
	ChecksumCRC32C string `json:"checksum_crc32c,omitempty"`
	// IfNoneMatch "*" stores the object only where none is.
	IfNoneMatch string `json:"if_none_match,omitempty"`
}

// Bounds of object/put-batch.
const (
	MaxBatchObjects  = 256
	MaxBatchData     = 2 << 20   // bytes of all objects' data together
	MaxBatchKeyBytes = 128 << 10 // bytes of all keys together
)

// ObjectPutBatchRequest stores small objects in one call: each is
// authorized, charged, labelled and staged as its own PUT would be, and
// all of them share one sync of the chunk store and one of the branch.
type ObjectPutBatchRequest struct {
	Repo    string        `json:"repo"`
	Branch  string        `json:"branch,omitempty"`
	Objects []BatchObject `json:"objects"`
}

// BatchResult is what became of one object of a put-batch: its new
// version, or its own error (the others are not affected by it).
type BatchResult struct {
	Key       string `json:"key"`
	ETag      string `json:"etag,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	Size      int64  `json:"size"`
	// Chunks is the stored version's chunk map (as object/stat's), so a
	// client can keep the bytes it sent in its chunk cache; empty for a
	// sealed object, whose bytes are read by range.
	Chunks []Chunk `json:"chunks,omitempty"`
	Error  *Error  `json:"error,omitempty"`
}

// ObjectPutBatchResponse answers object/put-batch, one result per object
// in the request's order.
type ObjectPutBatchResponse struct {
	Results []BatchResult `json:"results"`
	// Remaining is what a lease has left after the batch.
	Remaining *Remaining `json:"remaining,omitempty"`
}

// ObjectRenameRequest renames a key, or with Prefix every key under From
// ("a directory"), moving no bytes.
type ObjectRenameRequest struct {
	Repo      string `json:"repo"`
	Branch    string `json:"branch,omitempty"`
	From      string `json:"from"`
	To        string `json:"to"`
	Prefix    bool   `json:"prefix,omitempty"`
	NoReplace bool   `json:"no_replace,omitempty"`
}

// ObjectRenameResponse says how many keys moved, and whether at once.
type ObjectRenameResponse struct {
	Renamed   int    `json:"renamed"`
	Atomic    bool   `json:"atomic"`
	VersionID string `json:"version_id,omitempty"`
}

// ObjectListRequest lists objects and common prefixes under Prefix; with
// Commit (a commit ID of the branch's history), as of that commit,
// without staged changes.
type ObjectListRequest struct {
	Repo      string `json:"repo"`
	Branch    string `json:"branch,omitempty"`
	Prefix    string `json:"prefix,omitempty"`
	Delimiter string `json:"delimiter,omitempty"`
	Commit    string `json:"commit,omitempty"`
	Page
}

// ObjectListResponse answers object/list.
type ObjectListResponse struct {
	Objects    []Object `json:"objects"`
	Prefixes   []string `json:"prefixes"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// ObjectLookupRequest asks what Key names: an object, a directory, both;
// with Commit, as of that commit of the branch's history.
type ObjectLookupRequest struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch,omitempty"`
	Key    string `json:"key"`
	Commit string `json:"commit,omitempty"`
}

// ObjectLookupResponse answers object/lookup: the object (nil if none),
// whether Key is a directory, and whether a marker object Key/ makes it
// one.
type ObjectLookupResponse struct {
	Object *Object `json:"object"`
	Dir    bool    `json:"dir"`
	Marker bool    `json:"marker"`
}

// ObjectTouchedRequest asks which keys of a branch changed since Cursor
// ("" for a first call), so a client that follows it may trust what it
// knows of every other key.
type ObjectTouchedRequest struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// ObjectTouchedResponse answers object/touched: the keys the caller may
// list or read that changed (each once), or All when anything may have
// changed (a first call, a cursor too old or of another gateway process
// or branch, the branch's head moved, too many keys); Cursor is where to
// follow on. Coherent is false when writes the gateway does not hear can
// change the branch (several gateways): a client must then not trust
// what it knows for longer than it would without the journal.
type ObjectTouchedResponse struct {
	Cursor   string       `json:"cursor"`
	All      bool         `json:"all"`
	Keys     []TouchedKey `json:"keys"`
	Coherent bool         `json:"coherent"`
}

// TouchedKey is a key that changed and the version it holds now (a
// delete marker's, with Deleted, after a delete; "" when a staged change
// was dropped).
type TouchedKey struct {
	Key       string `json:"key"`
	VersionID string `json:"version_id,omitempty"`
	Deleted   bool   `json:"deleted,omitempty"`
}

// Op implements Request.
func (ObjectTouchedRequest) Op() string { return "object/touched" }

// Op implements Request.
func (ObjectStatRequest) Op() string { return "object/stat" }

// Op implements Request.
func (ObjectReadsRequest) Op() string { return "object/reads" }

// Op implements Request.
func (ObjectComposeRequest) Op() string { return "object/compose" }

// Op implements Request.
func (ObjectPutBatchRequest) Op() string { return "object/put-batch" }

// Op implements Request.
func (ObjectRenameRequest) Op() string { return "object/rename" }

// Op implements Request.
func (ObjectListRequest) Op() string { return "object/list" }

// Op implements Request.
func (ObjectLookupRequest) Op() string { return "object/lookup" }
