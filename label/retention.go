package label

import (
	"fmt"
	"slices"

	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/keyring"
)

// The retention classes, least strict first; "" is Normal.
const (
	Normal    = ""
	Scratch   = "scratch"
	Sensitive = "sensitive"
)

// retentions orders the classes: a write takes the strictest it is given.
var retentions = []string{Normal, Scratch, Sensitive}

// ValidRetention checks a retention class and its key domain (a domain
// only with Sensitive).
func ValidRetention(class, domain string) error {
	if class == "normal" {
		class = Normal
	}
	if !slices.Contains(retentions, class) {
		return fmt.Errorf("%w: retention %q (want normal, scratch or sensitive)", ErrInvalid, class)
	}
	if domain == "" {
		return nil
	}
	if class != Sensitive {
		return fmt.Errorf("%w: a key domain belongs to the sensitive class only", ErrInvalid)
	}
	if err := keyring.ValidDomain(domain); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// Retention is the retention class and key domain a write of key asking
// for class (and domain) takes under rules: the strictest of what it
// asks and what the matching rules set; the domain of the last matching
// sensitive rule naming one, else the one asked for.
func Retention(key, class, domain string, rules []Rule) (string, string) {
	if class == "normal" {
		class = Normal
	}
	for _, r := range rules {
		if r.Retention == "" || !glob.Match(glob.Clean(r.Glob), key) {
			continue
		}
		if slices.Index(retentions, r.Retention) > slices.Index(retentions, class) {
			class = r.Retention
		}
		if r.Domain != "" {
			domain = r.Domain
		}
	}
	if class != Sensitive {
		domain = ""
	}
	return class, domain
}
