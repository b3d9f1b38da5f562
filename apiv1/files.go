package apiv1

// Budgeted reads and evidence pointers (files/read, files/dereference,
// files/verify). A read is of a branch's last commit, never of its staged
// changes, so every answer can name the commit it came from; pointers
// are nas://REPO/PATH@COMMIT#Lx-Ly (package evidence).

// The views of a budgeted read, finest first.
const (
	ViewFull    = "full"
	ViewSection = "section"
	ViewLines   = "lines"
	ViewOutline = "outline"
)

// Bounds of a budgeted read.
const (
	// DefaultBudgetTokens is the budget of a read that names none.
	DefaultBudgetTokens = 4000
	// MaxBudgetTokens bounds budget_tokens (about 4 MiB of content).
	MaxBudgetTokens = 1 << 20
	// MaxReadBytes bounds the objects a budgeted read outlines or slices
	// (it reads them whole); larger ones answer TooLarge: read them with
	// ranged S3 GETs.
	MaxReadBytes = 64 << 20
)

// LineRange is lines StartLine..EndLine of a file, 1-based, inclusive.
type LineRange struct {
	StartLine int `json:"start_line"`
	EndLine   int `json:"end_line"`
}

// FileReadRequest reads Path in the best view that fits BudgetTokens:
// View is full (the default), section (Section names a Markdown heading,
// by title or path "Top/Sub", a Go symbol "Func" or "Type.Method", a
// Python def or class, a JSON or YAML key "a/b"), lines (Range) or
// outline. Branch "" is the lease's branch, or the repository's default
// for the owner.
type FileReadRequest struct {
	Repo         string     `json:"repo"`
	Branch       string     `json:"branch,omitempty"`
	Path         string     `json:"path"`
	View         string     `json:"view,omitempty"`
	Range        *LineRange `json:"range,omitempty"`
	Section      string     `json:"section,omitempty"`
	BudgetTokens int        `json:"budget_tokens,omitempty"`
}

// Evidence is a pointer to the lines a view came from, with the SHA-256
// (hex) of their exact bytes.
type Evidence struct {
	Pointer string `json:"pointer"`
	SHA256  string `json:"sha256"`
}

// FileReadResponse is the view returned. View is what was returned (a
// coarser one than asked for when that did not fit, with Note saying
// why); Tokens is its estimated size (ceil(bytes/4)); Generated is true
// only for model-written views (never, today); Truncated is true only
// when even the coarsest view, the outline, was cut, and then its last
// line says what was left out. Lines is the file's line count at Commit.
type FileReadResponse struct {
	View      string     `json:"view"`
	Tokens    int        `json:"tokens"`
	Generated bool       `json:"generated"`
	Truncated bool       `json:"truncated"`
	Content   string     `json:"content"`
	Evidence  []Evidence `json:"evidence"`
	Commit    string     `json:"commit"`
	Lines     int        `json:"lines"`
	Note      string     `json:"note,omitempty"`
}

// FileDereferenceRequest asks for the lines a pointer names.
type FileDereferenceRequest struct {
	Pointer string `json:"pointer"`
}

// FileDereferenceResponse is the exact content of a pointer's lines at
// its commit, with their SHA-256 (hex).
type FileDereferenceResponse struct {
	Pointer string `json:"pointer"`
	Content string `json:"content"`
	SHA256  string `json:"sha256"`
	Tokens  int    `json:"tokens"`
}

// FileVerifyRequest checks that a pointer's lines hash to SHA256.
type FileVerifyRequest struct {
	Pointer string `json:"pointer"`
	SHA256  string `json:"sha256"`
}

// FileVerifyResponse says whether the pointer's lines exist at its commit
// and hash to the SHA-256 given; Reason says why not.
type FileVerifyResponse struct {
	Valid  bool   `json:"valid"`
	Reason string `json:"reason,omitempty"`
}

// Op implements Request.
func (FileReadRequest) Op() string { return "files/read" }

// Op implements Request.
func (FileDereferenceRequest) Op() string { return "files/dereference" }

// Op implements Request.
func (FileVerifyRequest) Op() string { return "files/verify" }

// ImplyView sets the view a request without one means: lines for a
// range, section for a section (the gateway's default is full).
func (r *FileReadRequest) ImplyView() {
	switch {
	case r.View != "":
	case r.Range != nil:
		r.View = ViewLines
	case r.Section != "":
		r.View = ViewSection
	}
}
