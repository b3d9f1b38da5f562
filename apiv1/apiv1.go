package apiv1

// Prefix is the path every operation lives under.
const Prefix = "/_nas/v1/"

// IdempotencyHeader carries a write's idempotency key instead of the
// body's idempotency_key (signed like every x-nas- header), so neither
// side rewrites a large body to add or remove it.
const IdempotencyHeader = "X-Nas-Idempotency-Key"

// Request is a request of one operation; Op names it ("repo/create").
type Request interface {
	Op() string
}

// Page is what every list request takes.
type Page struct {
	Cursor string `json:"cursor,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// Limits of list pages.
const (
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// Error is the error document: {"error": Error}.
type Error struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

// ErrorDocument wraps an Error as the API sends it.
type ErrorDocument struct {
	Error *Error `json:"error"`
}

// Error codes of the control API.
const (
	CodeInvalidArgument     = "InvalidArgument"
	CodeUnauthenticated     = "Unauthenticated"
	CodeAccessDenied        = "AccessDenied"
	CodeNotFound            = "NotFound"
	CodeAlreadyExists       = "AlreadyExists"
	CodeConflict            = "Conflict"
	CodeNothingToCommit     = "NothingToCommit"
	CodeQuotaExceeded       = "QuotaExceeded"
	CodeInvalidRange        = "InvalidRange"
	CodeMergeConflict       = "MergeConflict"
	CodeAlreadyDecided      = "AlreadyDecided"
	CodeApprovalVoid        = "ApprovalVoid"
	CodeRecorderUnavailable = "RecorderUnavailable"
	CodeNotImplemented      = "NotImplemented"
	CodeTooLarge            = "TooLarge"
	CodeRequestTimeout      = "RequestTimeout"
	CodeUnknownOperation    = "UnknownOperation"
	CodeMethodNotAllowed    = "MethodNotAllowed"
	CodeInternalError       = "InternalError"
	// CodeKeyDestroyed (410) is a sensitive object whose key domain a
	// forget destroyed: its bytes can no longer be read.
	CodeKeyDestroyed = "KeyDestroyed"
	// CodeChecksPending (409) is a merge whose target requires checks
	// that have not passed on its digest yet.
	CodeChecksPending = "ChecksPending"
	// CodeChecksFailed (409) is a merge whose target requires a check
	// that failed or ended in error on its digest.
	CodeChecksFailed = "ChecksFailed"
	// CodeStorageFull (507) is a write refused because the gateway's disk
	// is full or at its free-space floor (nas serve --min-free); nothing
	// of it was stored.
	CodeStorageFull = "StorageFull"
)
