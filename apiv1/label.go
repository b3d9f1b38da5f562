package apiv1

import "encoding/json"

// Trust labels (label/set, label/list, label/delete): the owner's label
// rules of a repository. Each rule raises the origin and sensitivity of
// every key its glob matches (never lowers them) and may mark them
// reviewed; an entry's effective labels are its stored ones under the
// rules. A lease never sees an entry above its sensitivity_max.

// Labels are an entry's effective trust labels.
type Labels struct {
	Origin      string `json:"origin"`      // owner, agent or external
	Sensitivity string `json:"sensitivity"` // public, private or secret
	Reviewed    bool   `json:"reviewed"`
}

// LabelRule is one of a repository's label rules.
type LabelRule struct {
	Glob        string `json:"glob"`
	Origin      string `json:"origin,omitempty"`
	Sensitivity string `json:"sensitivity,omitempty"`
	Reviewed    bool   `json:"reviewed,omitempty"`
	// Retention (scratch or sensitive) and Domain (the key domain of
	// sensitive writes) apply to versions written after the rule is set.
	Retention string `json:"retention,omitempty"`
	Domain    string `json:"domain,omitempty"`
}

// LabelSetRequest adds the rule for Glob to Repo's rules, replacing the
// one already there for the same glob.
type LabelSetRequest struct {
	Repo string `json:"repo"`
	LabelRule
}

// LabelListRequest lists Repo's label rules.
type LabelListRequest struct {
	Repo string `json:"repo"`
}

// LabelDeleteRequest removes the rule for Glob.
type LabelDeleteRequest struct {
	Repo string `json:"repo"`
	Glob string `json:"glob"`
}

// LabelRulesResponse is a repository's label rules, in the order they
// apply.
type LabelRulesResponse struct {
	Repo  string      `json:"repo"`
	Rules []LabelRule `json:"rules"`
}

// Op implements Request.
func (LabelSetRequest) Op() string { return "label/set" }

// Op implements Request.
func (LabelListRequest) Op() string { return "label/list" }

// Op implements Request.
func (LabelDeleteRequest) Op() string { return "label/delete" }

// Handoff is a structured handoff: lease writes under Glob must be JSON
// documents valid against Schema (a JSON Schema, draft 2020-12 or 07,
// self-contained: no $ref), and those that are valid are labelled
// reviewed.
type Handoff struct {
	Glob   string          `json:"glob"`
	Schema json.RawMessage `json:"schema"`
}

// HandoffSetRequest adds the handoff for Glob, or replaces it.
type HandoffSetRequest struct {
	Repo string `json:"repo"`
	Handoff
}

// HandoffListRequest lists Repo's handoffs.
type HandoffListRequest struct {
	Repo string `json:"repo"`
}

// HandoffDeleteRequest removes the handoff for Glob.
type HandoffDeleteRequest struct {
	Repo string `json:"repo"`
	Glob string `json:"glob"`
}

// HandoffsResponse is a repository's handoffs.
type HandoffsResponse struct {
	Repo     string    `json:"repo"`
	Handoffs []Handoff `json:"handoffs"`
}

// Op implements Request.
func (HandoffSetRequest) Op() string { return "handoff/set" }

// Op implements Request.
func (HandoffListRequest) Op() string { return "handoff/list" }

// Op implements Request.
func (HandoffDeleteRequest) Op() string { return "handoff/delete" }
