package apiv1

import "time"

// Pre-merge checks: named webhooks or commands the owner registers per
// repository, branch rules that require them, and their results on
// proposals, bound to each proposal's digest.

// CheckResult is one check's result on a proposal: State is pending,
// pass, fail or error; DiffSHA256 is the digest it was run on (a result
// counts only for that digest); Required says whether the proposal's
// target requires it now. A lease sees no Message.
type CheckResult struct {
	Name       string    `json:"name"`
	State      string    `json:"state"`
	Message    string    `json:"message,omitempty"`
	DiffSHA256 string    `json:"diff_sha256"`
	Required   bool      `json:"required"`
	Attempts   int       `json:"attempts"`
	Started    time.Time `json:"started,omitzero"`
	Finished   time.Time `json:"finished,omitzero"`
	NextTry    time.Time `json:"next_try,omitzero"`
}

// Check is a repository's check: a webhook (URL; Secret, shown only in
// the answer of check/add, signs every request: x-nas-signature:
// t=UNIX,v1=HEX, the HMAC-SHA256 of "UNIX." and the body) or a command
// (a program in the gateway's --check-commands folder, with Args).
type Check struct {
	Repo           string    `json:"repo"`
	Name           string    `json:"name"`
	Kind           string    `json:"kind"` // webhook or command
	URL            string    `json:"url,omitempty"`
	Secret         string    `json:"secret,omitempty"`
	Command        string    `json:"command,omitempty"`
	Args           []string  `json:"args,omitempty"`
	TimeoutSeconds int64     `json:"timeout_seconds,omitempty"`
	Created        time.Time `json:"created"`
}

// CheckRule is the checks a merge into Branch requires.
type CheckRule struct {
	Branch string   `json:"branch"`
	Checks []string `json:"checks"`
}

// CheckAddRequest registers check Name of Repo: URL for a webhook, or
// Command (an absolute path in the --check-commands folder) with Args;
// TimeoutSeconds bounds an attempt (0: the gateway's default).
type CheckAddRequest struct {
	Repo           string   `json:"repo"`
	Name           string   `json:"name"`
	URL            string   `json:"url,omitempty"`
	Command        string   `json:"command,omitempty"`
	Args           []string `json:"args,omitempty"`
	TimeoutSeconds int64    `json:"timeout_seconds,omitempty"`
}

// CheckResponse answers check/add and check/remove.
type CheckResponse struct {
	Check Check `json:"check"`
}

// CheckListRequest lists the checks and rules of Repo.
type CheckListRequest struct {
	Repo string `json:"repo"`
}

// CheckListResponse answers check/list.
type CheckListResponse struct {
	Checks []Check     `json:"checks"`
	Rules  []CheckRule `json:"rules"`
}

// CheckRemoveRequest removes check Name of Repo (a rule naming it keeps
// its merges refused until the rule changes).
type CheckRemoveRequest struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
}

// CheckRequireRequest sets the checks a merge into Branch of Repo
// requires (none: no rule).
type CheckRequireRequest struct {
	Repo   string   `json:"repo"`
	Branch string   `json:"branch"`
	Checks []string `json:"checks"`
}

// CheckRequireResponse answers check/require.
type CheckRequireResponse struct {
	Rule CheckRule `json:"rule"`
}

// CheckResultsRequest names a proposal.
type CheckResultsRequest struct {
	ProposalID string `json:"proposal_id"`
}

// CheckRerunRequest runs the named checks (none: all it ran) of a
// proposal again, on its digest.
type CheckRerunRequest struct {
	ProposalID string   `json:"proposal_id"`
	Checks     []string `json:"checks,omitempty"`
}

// CheckResultsResponse answers check/results and check/rerun.
type CheckResultsResponse struct {
	Results []CheckResult `json:"results"`
}

// Op implements Request.
func (CheckAddRequest) Op() string { return "check/add" }

// Op implements Request.
func (CheckListRequest) Op() string { return "check/list" }

// Op implements Request.
func (CheckRemoveRequest) Op() string { return "check/remove" }

// Op implements Request.
func (CheckRequireRequest) Op() string { return "check/require" }

// Op implements Request.
func (CheckResultsRequest) Op() string { return "check/results" }

// Op implements Request.
func (CheckRerunRequest) Op() string { return "check/rerun" }
