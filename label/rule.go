package label

import (
	"fmt"

	"github.com/agentnas/nas/glob"
)

// Rule is the owner's label on a glob of a repository's keys: it raises
// the origin and sensitivity of every key the glob matches to at least
// its own (empty: leaves that scale alone) and, when Reviewed, marks the
// keys reviewed.
type Rule struct {
	Glob        string `json:"glob"`
	Origin      string `json:"origin,omitempty"`
	Sensitivity string `json:"sensitivity,omitempty"`
	Reviewed    bool   `json:"reviewed,omitempty"`
	// Retention is the retention class of what is written under the glob
	// from now on (Scratch or Sensitive; "" leaves it normal), and Domain
	// the key domain of sensitive writes ("" for the repository's own).
	// Unlike the labels they apply when a version is written, not when it
	// is read: sealing cannot happen afterwards.
	Retention string `json:"retention,omitempty"`
	Domain    string `json:"domain,omitempty"`
}

// MaxRules bounds the rules of one repository, maxGlob a rule's glob.
const (
	MaxRules = 128
	maxGlob  = 256
)

// Validate checks the rule's glob and labels.
func (r Rule) Validate() error {
	if r.Glob == "" {
		return fmt.Errorf("%w: a rule needs a glob", ErrInvalid)
	}
	if len(r.Glob) > maxGlob {
		return fmt.Errorf("%w: a glob of %d bytes (at most %d)", ErrInvalid, len(r.Glob), maxGlob)
	}
	if r.Origin == "" && r.Sensitivity == "" && !r.Reviewed && r.Retention == "" {
		return fmt.Errorf("%w: rule %q sets no label", ErrInvalid, r.Glob)
	}
	if err := ValidRetention(r.Retention, r.Domain); err != nil {
		return err
	}
	return Label{Origin: r.Origin, Sensitivity: r.Sensitivity}.Validate()
}

// Apply is the effective label of key stored with l under rules.
func Apply(l Label, key string, rules []Rule) Label {
	l = l.Norm()
	for _, r := range rules {
		if !glob.Match(glob.Clean(r.Glob), key) {
			continue
		}
		l = Raise(l, r.Origin, r.Sensitivity)
		l.Reviewed = l.Reviewed || r.Reviewed
	}
	return l
}
