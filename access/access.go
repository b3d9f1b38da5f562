package access

import "context"

// The APIs a request can reach.
const (
	S3      = "s3"
	Control = "control"
	STS     = "sts"
	Health  = "health"
	Metrics = "metrics"
	MCP     = "mcp"
)

// Entry is what the edge serving a request tells the access log.
type Entry struct {
	API       string // S3, Control, STS, Health, Metrics or MCP
	Operation string // a bounded name: "GetObject", "repo/create", "AssumeRole"
	Repo      string
	Branch    string
	RequestID string
	// Principal is "owner" or the lease ID; "" when the request was
	// refused before it had one.
	Principal string
}

type key struct{}

// With returns ctx carrying e.
func With(ctx context.Context, e *Entry) context.Context {
	return context.WithValue(ctx, key{}, e)
}

// From returns the entry ctx carries, or a fresh one that nobody reads
// (a handler used without the gateway), so callers never check for nil.
func From(ctx context.Context) *Entry {
	if e, ok := ctx.Value(key{}).(*Entry); ok {
		return e
	}
	return &Entry{}
}
