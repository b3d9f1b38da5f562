package apiv1

// Full-text search (search/query) and its index (index/rebuild,
// index/status, index/delete). The index is a derivative of one commit
// of a repository: it records its recipe (indexer, version, settings)
// and inputs (commit, paths indexed), can be deleted and rebuilt at any
// time, and is never the truth. A search answers snippets and evidence
// pointers, never whole files, and only of paths the caller may read.

// Bounds of a search.
const (
	// DefaultSearchLimit is the hits of a search that names no limit.
	DefaultSearchLimit = 10
	// MaxSearchLimit bounds limit.
	MaxSearchLimit = 100
	// MaxQueryBytes bounds a query's text.
	MaxQueryBytes = 1024
)

// SearchQueryRequest searches the files of a commit: Commit if given (one
// the caller's branch has seen), else Branch's last commit (Branch "" is
// the lease's branch, or the default branch for the owner). Prefix limits
// the search to keys under it. Quarantined notes (any key with a
// /memory/quarantine/ segment) are left out unless IncludeQuarantine.
type SearchQueryRequest struct {
	Repo              string `json:"repo"`
	Branch            string `json:"branch,omitempty"`
	Commit            string `json:"commit,omitempty"`
	Query             string `json:"query"`
	Prefix            string `json:"prefix,omitempty"`
	Limit             int    `json:"limit,omitempty"`
	IncludeQuarantine bool   `json:"include_quarantine,omitempty"`
}

// SearchHit is one file that matched: the lines of its best snippet and
// their evidence pointer.
type SearchHit struct {
	Path     string    `json:"path"`
	Score    float64   `json:"score"`
	Lines    LineRange `json:"lines"`
	Snippet  string    `json:"snippet"`
	Evidence Evidence  `json:"evidence"`
}

// SearchQueryResponse answers search/query: the hits, best first, and
// the index that answered (its recipe and inputs).
type SearchQueryResponse struct {
	Commit string      `json:"commit"`
	Hits   []SearchHit `json:"hits"`
	Tokens int         `json:"tokens"`
	Index  IndexInfo   `json:"index"`
}

// IndexRecipe says how an index was made, so a rebuild makes the same.
type IndexRecipe struct {
	Indexer  string            `json:"indexer"`
	Version  string            `json:"version"`
	Settings map[string]string `json:"settings"`
}

// IndexInfo is an index as a derivative: its recipe and inputs.
type IndexInfo struct {
	Repo      string      `json:"repo"`
	Commit    string      `json:"commit"`
	Recipe    IndexRecipe `json:"recipe"`
	Files     int         `json:"files"`
	Skipped   int         `json:"skipped"`
	Bytes     int64       `json:"bytes"`
	BuiltAt   string      `json:"built_at"`
	BuildSecs float64     `json:"build_seconds"`
}

// IndexRequest names a repository's index (owner only): rebuild builds it
// anew for Branch's last commit (default: the default branch), delete
// removes every index of the repository, status lists them.
type IndexRequest struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch,omitempty"`
}

// IndexRebuildRequest is index/rebuild.
type IndexRebuildRequest IndexRequest

// IndexDeleteRequest is index/delete.
type IndexDeleteRequest IndexRequest

// IndexStatusRequest is index/status.
type IndexStatusRequest IndexRequest

// IndexResponse answers index/rebuild and index/status: the indexes the
// repository has.
type IndexResponse struct {
	Indexes []IndexInfo `json:"indexes"`
}

// Op implements Request.
func (SearchQueryRequest) Op() string { return "search/query" }

// Op implements Request.
func (IndexRebuildRequest) Op() string { return "index/rebuild" }

// Op implements Request.
func (IndexDeleteRequest) Op() string { return "index/delete" }

// Op implements Request.
func (IndexStatusRequest) Op() string { return "index/status" }
