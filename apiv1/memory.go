package apiv1

// Agent memory (memory/remember, memory/recall): notes are plain Markdown
// files with the specification's YAML front matter in a role's Agent
// Home, HOME/memory/notes/ID.md (or HOME/memory/quarantine/ID.md for a
// note written by a tainted session), readable with no memory layer at
// all. HOME is agents/ROLE: a lease's role, or the Home the owner names.
// A note is never overwritten: a new fact supersedes old ones.

// The kinds of note.
const (
	KindEpisodic   = "episodic"
	KindSemantic   = "semantic"
	KindProcedural = "procedural"
	KindPreference = "preference"
)

// Note is a note's front matter and body as stored.
type Note struct {
	ID         string   `json:"id" yaml:"id"`
	Kind       string   `json:"kind" yaml:"kind"`
	Subject    string   `json:"subject" yaml:"subject"`
	ValidFrom  string   `json:"valid_from" yaml:"valid_from"`
	ValidTo    *string  `json:"valid_to" yaml:"valid_to"`
	Confidence float64  `json:"confidence" yaml:"confidence"`
	Origin     string   `json:"origin" yaml:"origin"`
	Reviewed   bool     `json:"reviewed" yaml:"reviewed"`
	Sources    []string `json:"sources" yaml:"sources"`
	Supersedes []string `json:"supersedes" yaml:"supersedes"`
	Body       string   `json:"body" yaml:"-"`
}

// MemoryRememberRequest writes a note on Branch (default: the lease's)
// in Home (default: the lease's role's, agents/ROLE; the owner must name
// one) and commits it. Sources are evidence pointers the note rests on;
// Supersedes names notes of the same Home it replaces.
type MemoryRememberRequest struct {
	Repo       string   `json:"repo"`
	Branch     string   `json:"branch,omitempty"`
	Home       string   `json:"home,omitempty"`
	Kind       string   `json:"kind"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`
	Sources    []string `json:"sources,omitempty"`
	Confidence *float64 `json:"confidence,omitempty"`
	ValidFrom  string   `json:"valid_from,omitempty"`
	ValidTo    string   `json:"valid_to,omitempty"`
	Supersedes []string `json:"supersedes,omitempty"`
	Intent     string   `json:"intent,omitempty"`
}

// MemoryRememberResponse is the note written, where, and the commit that
// holds it.
type MemoryRememberResponse struct {
	Note        Note   `json:"note"`
	Path        string `json:"path"`
	Quarantined bool   `json:"quarantined"`
	Commit      string `json:"commit"`
}

// MemoryRecallRequest recalls the notes of Home (default: the lease's
// role's) on Branch's last commit that best match Query, within
// BudgetTokens. Superseded notes are left out unless IncludeSuperseded;
// quarantined ones (written by a tainted session) are never autoloaded:
// left out unless IncludeQuarantine, and marked when included.
type MemoryRecallRequest struct {
	Repo              string `json:"repo"`
	Branch            string `json:"branch,omitempty"`
	Home              string `json:"home,omitempty"`
	Query             string `json:"query"`
	Limit             int    `json:"limit,omitempty"`
	BudgetTokens      int    `json:"budget_tokens,omitempty"`
	IncludeSuperseded bool   `json:"include_superseded,omitempty"`
	IncludeQuarantine bool   `json:"include_quarantine,omitempty"`
}

// RecalledNote is one note recalled: its front matter, where it is, its
// review state, what supersedes it, and its evidence pointer. Body is
// the note's text, or "" when the budget did not reach it (Truncated).
type RecalledNote struct {
	Note
	Path         string   `json:"path"`
	Quarantined  bool     `json:"quarantined"`
	SupersededBy []string `json:"superseded_by,omitempty"`
	Score        float64  `json:"score"`
	Evidence     Evidence `json:"evidence"`
	Truncated    bool     `json:"truncated,omitempty"`
}

// MemoryRecallResponse answers memory/recall, best first.
type MemoryRecallResponse struct {
	Commit    string         `json:"commit"`
	Notes     []RecalledNote `json:"notes"`
	Tokens    int            `json:"tokens"`
	Truncated bool           `json:"truncated"`
}

// MemoryTestRequest runs the golden recall tests of Home (default: the
// lease's role's) on Branch's last commit: HOME/recall-tests.yaml, a
// YAML list of {query, expect: [note IDs], top_k}. Each case passes when
// memory/recall of its query returns every expected note, among the
// first top_k when it names one.
type MemoryTestRequest struct {
	Repo   string `json:"repo"`
	Branch string `json:"branch,omitempty"`
	Home   string `json:"home,omitempty"`
}

// RecallTestResult is one case of a recall test: what it expected, the
// note IDs recall returned in order, those it missed, and the verdict.
type RecallTestResult struct {
	Query   string   `json:"query"`
	Expect  []string `json:"expect"`
	TopK    int      `json:"top_k,omitempty"`
	Got     []string `json:"got"`
	Missing []string `json:"missing"`
	Pass    bool     `json:"pass"`
}

// MemoryTestResponse answers memory/test: every case, in the file's order.
type MemoryTestResponse struct {
	Commit string             `json:"commit"`
	Home   string             `json:"home"`
	Cases  []RecallTestResult `json:"cases"`
	Passed int                `json:"passed"`
	Failed int                `json:"failed"`
}

// Op implements Request.
func (MemoryRememberRequest) Op() string { return "memory/remember" }

// Op implements Request.
func (MemoryTestRequest) Op() string { return "memory/test" }

// Op implements Request.
func (MemoryRecallRequest) Op() string { return "memory/recall" }

// MemoryReviewRequest is the owner's review of a Home's quarantine on
// Branch: without Release it lists the quarantined notes; with it, each
// named note is released, moved to notes/ marked reviewed (so recall
// autoloads it and its labels count as reviewed), in one commit.
type MemoryReviewRequest struct {
	Repo    string   `json:"repo"`
	Branch  string   `json:"branch,omitempty"`
	Home    string   `json:"home"`
	Release []string `json:"release,omitempty"`
}

// QuarantinedNote is a note waiting for review, and where.
type QuarantinedNote struct {
	Note
	Path string `json:"path"`
}

// MemoryReviewResponse lists what still waits and what was released
// (with the commit that released it).
type MemoryReviewResponse struct {
	Home        string            `json:"home"`
	Quarantined []QuarantinedNote `json:"quarantined"`
	Released    []string          `json:"released"`
	Commit      string            `json:"commit,omitempty"`
}

// Op implements Request.
func (MemoryReviewRequest) Op() string { return "memory/review" }
