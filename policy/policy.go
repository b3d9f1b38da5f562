package policy

import (
	"fmt"
	"slices"

	"github.com/agentnas/nas/glob"
)

// Action is what a policy decides.
type Action string

// Policy actions.
const (
	Merge  Action = "merge"
	Hold   Action = "gate"
	Refuse Action = "refuse"
)

// Rule matches proposals and decides them. Every condition that is set
// must hold; an empty condition matches anything.
type Rule struct {
	Name string `json:"name"`
	// Roles the proposing lease acts as ("owner" for the owner).
	Roles []string `json:"roles,omitempty"`
	// Into names target branches.
	Into []string `json:"into,omitempty"`
	// MaxChanges bounds the number of changed keys (0: no bound).
	MaxChanges int `json:"max_changes,omitempty"`
	// Within: every changed key must match one of these globs.
	Within []string `json:"within,omitempty"`
	// Touches: some changed key matches one of these globs.
	Touches []string `json:"touches,omitempty"`
	// Deletes: true matches proposals that delete keys, false ones that
	// don't; unset matches both.
	Deletes *bool  `json:"deletes,omitempty"`
	Then    Action `json:"then"`
}

// Policy is a repository's ordered rules.
type Policy struct {
	Rules []Rule `json:"rules"`
	// Guard is the session invariant; nil is its defaults (gate, enforce,
	// private).
	Guard *Guard `json:"guard,omitempty"`
}

// Validate checks a policy.
func (p *Policy) Validate() error {
	for i, r := range p.Rules {
		if r.Name == "" {
			return fmt.Errorf("rule %d has no name", i)
		}
		if !slices.Contains([]Action{Merge, Hold, Refuse}, r.Then) {
			return fmt.Errorf("rule %s: then must be merge, gate or refuse", r.Name)
		}
	}
	if p.Guard != nil {
		return p.Guard.validate()
	}
	return nil
}

// Facts are what a rule is evaluated on: the proposing role ("owner"
// for the owner), the target branch, the changed keys and whether any is
// deleted.
type Facts struct {
	Role    string
	Into    string
	Keys    []string
	Deletes bool
}

// Decide returns the action of the first matching rule, or gate with the
// default rule.
func (p *Policy) Decide(f Facts) (Action, string) {
	for _, r := range p.Rules {
		if r.matches(f) {
			return r.Then, r.Name
		}
	}
	return Hold, "default: a person decides"
}

func (r *Rule) matches(f Facts) bool {
	if len(r.Roles) > 0 && !slices.Contains(r.Roles, f.Role) {
		return false
	}
	if len(r.Into) > 0 && !slices.Contains(r.Into, f.Into) {
		return false
	}
	if r.MaxChanges > 0 && len(f.Keys) > r.MaxChanges {
		return false
	}
	if r.Deletes != nil && *r.Deletes != f.Deletes {
		return false
	}
	if len(r.Within) > 0 {
		for _, k := range f.Keys {
			if !anyMatch(r.Within, k) {
				return false
			}
		}
	}
	if len(r.Touches) > 0 {
		hit := false
		for _, k := range f.Keys {
			if anyMatch(r.Touches, k) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

func anyMatch(globs []string, key string) bool {
	for _, g := range globs {
		if glob.Match(glob.Clean(g), key) {
			return true
		}
	}
	return false
}
