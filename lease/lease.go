package lease

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentnas/nas/glob"
)

// Action is an operation a lease can allow.
type Action string

// The actions of the specification.
const (
	List    Action = "list"
	Read    Action = "read"
	Write   Action = "write"
	Delete  Action = "delete"
	Propose Action = "propose"
)

// Actions lists every action, in canonical order.
var Actions = []Action{List, Read, Write, Delete, Propose}

// ParseActions parses a comma-separated action list ("read,write").
func ParseActions(s string) ([]Action, error) {
	var out []Action
	for _, p := range strings.Split(s, ",") {
		a := Action(strings.TrimSpace(strings.ToLower(p)))
		if a == "" {
			continue
		}
		if !slices.Contains(Actions, a) {
			return nil, fmt.Errorf("action %q (want %v): %w", a, Actions, ErrInvalid)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no actions: %w", ErrInvalid)
	}
	return NormActions(out), nil
}

// NormActions sorts actions into canonical order and drops repeats.
func NormActions(as []Action) []Action {
	out := slices.Clone(as)
	sort.Slice(out, func(i, j int) bool { return slices.Index(Actions, out[i]) < slices.Index(Actions, out[j]) })
	return slices.Compact(out)
}

// Rule gives actions on the keys matching a glob.
type Rule struct {
	Path    string   `json:"path"`
	Actions []Action `json:"actions"`
}

// Budgets bound what a lease may consume; zero means no limit.
type Budgets struct {
	BytesRead    int64 `json:"bytes_read,omitempty"`
	BytesWritten int64 `json:"bytes_written,omitempty"`
	Requests     int64 `json:"requests,omitempty"`
}

// Usage is what a lease has consumed.
type Usage struct {
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	Requests     int64 `json:"requests"`
}

// Remaining is what is left of each budget; -1 means unlimited.
type Remaining struct {
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	Requests     int64 `json:"requests"`
}

// Grant shares one more path into a lease's view.
type Grant struct {
	ID        string    `json:"id"`
	Path      string    `json:"path"`
	Actions   []Action  `json:"actions"`
	ExpiresAt time.Time `json:"expires_at"`
	SingleUse bool      `json:"single_use,omitempty"`
	Used      bool      `json:"used,omitempty"`
	Revoked   bool      `json:"revoked,omitempty"`
}

// Live reports whether the grant may still be used at now.
func (g *Grant) Live(now time.Time) bool { return !g.Used && !g.Revoked && now.Before(g.ExpiresAt) }

// Lease is one run's authorization. Its JSON is the specification's
// lease.json plus the fields a client needs to use it.
type Lease struct {
	ID         string  `json:"lease_id"`
	Run        string  `json:"run"`
	Role       string  `json:"role"`
	Principal  string  `json:"principal"`
	OnBehalfOf string  `json:"on_behalf_of,omitempty"`
	Parent     *string `json:"parent"`
	Purpose    string  `json:"purpose,omitempty"`
	Repo       string  `json:"repo"`
	Branch     string  `json:"branch"`
	// ForkedFrom is the branch the run's branch was forked from: the one
	// target its proposals may name besides its role's (Role.ProposeInto).
	ForkedFrom     string    `json:"forked_from,omitempty"`
	Paths          []string  `json:"paths"`
	Actions        []Action  `json:"actions"`
	View           []Rule    `json:"view"`
	SensitivityMax string    `json:"sensitivity_max"`
	Egress         bool      `json:"egress"`
	RequiresGate   []string  `json:"requires_gate"`
	Budgets        Budgets   `json:"budgets"`
	IssuedAt       time.Time `json:"issued_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	Revoked        bool      `json:"revoked,omitempty"`
	RevokedAt      time.Time `json:"revoked_at,omitzero"`
	Grants         []Grant   `json:"grants,omitempty"`
	AccessKeyID    string    `json:"access_key_id"`
	// WebIdentity is the verified OpenID Connect identity that assumed
	// the role (AssumeRoleWithWebIdentity); a child keeps its parent's.
	WebIdentity *WebIdentity `json:"web_identity,omitempty"`
}

// Limits of leases.
const (
	DefaultTTL = 4 * time.Hour
	MaxTTL     = 24 * time.Hour
)

// Sensitivity levels, lowest first.
var Sensitivities = []string{"public", "private", "secret"}

// summarize fills Paths and Actions (the spec's flat fields) from View.
func (l *Lease) summarize() {
	l.Paths, l.Actions = nil, nil
	for _, r := range l.View {
		l.Paths = append(l.Paths, r.Path)
		l.Actions = append(l.Actions, r.Actions...)
	}
	l.Paths = slices.Compact(slices.Sorted(slices.Values(l.Paths)))
	l.Actions = NormActions(l.Actions)
	if l.RequiresGate == nil {
		l.RequiresGate = []string{}
	}
}

// rules returns the view plus the live grants.
func (l *Lease) rules(now time.Time) []Rule {
	rs := l.View
	for _, g := range l.Grants {
		if g.Live(now) {
			rs = append(slices.Clip(rs), Rule{Path: g.Path, Actions: g.Actions})
		}
	}
	return rs
}

// Visible reports whether key is in the lease's view (any action).
func (l *Lease) Visible(key string, now time.Time) bool {
	for _, r := range l.rules(now) {
		if glob.Match(r.Path, key) {
			return true
		}
	}
	return false
}

// Allows reports whether the view grants action a on key.
func (l *Lease) Allows(a Action, key string, now time.Time) bool {
	for _, r := range l.rules(now) {
		if slices.Contains(r.Actions, a) && glob.Match(r.Path, key) {
			return true
		}
	}
	return false
}

// AllowsAnywhere reports whether some rule grants a (for bucket-level
// operations such as listing).
func (l *Lease) AllowsAnywhere(a Action, now time.Time) bool {
	for _, r := range l.rules(now) {
		if slices.Contains(r.Actions, a) {
			return true
		}
	}
	return false
}

// KeyRange is a half-open range of keys [Start, End); End "" is unbounded.
type KeyRange struct{ Start, End string }

// Ranges returns the key ranges a listing must scan to find every key on
// which the view grants a: one range per distinct literal prefix of those
// globs, merged. A listing under the lease seeks only these, so hidden data
// outside them costs nothing to skip.
func (l *Lease) Ranges(a Action, now time.Time) []KeyRange {
	var prefixes []string
	for _, r := range l.rules(now) {
		if slices.Contains(r.Actions, a) {
			prefixes = append(prefixes, glob.LiteralPrefix(r.Path))
		}
	}
	sort.Strings(prefixes)
	var out []KeyRange
	for _, p := range prefixes {
		// A prefix inside the previous range adds nothing.
		if n := len(out); n > 0 && strings.HasPrefix(p, out[n-1].Start) {
			continue
		}
		out = append(out, KeyRange{Start: p, End: prefixEnd(p)})
	}
	return out
}

func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}

// Decision is the answer of the authorization point.
type Decision int

// Decisions.
const (
	Allow Decision = iota
	NotFound
	Denied
	OverBudget
	Expired
)

func (d Decision) String() string {
	return [...]string{"allow", "not_found", "deny", "over_budget", "expired"}[d]
}

// Verdict is a Decision with the rule that produced it.
type Verdict struct {
	Decision Decision
	Rule     string // what matched, for the flight recorder and errors
	// Grant names the grant that alone allows the request, if one does.
	Grant string
	// SingleUseGrant is Grant when that grant is single-use: the
	// authorization point consumes it before the request acts, so it
	// serves exactly one request.
	SingleUseGrant string
}

// Check is the authorization question for one key (key "" asks about the
// repository and branch themselves). It does not look at budgets or
// expiry; Store.Authorize does.
func (l *Lease) Check(a Action, repo, branch, key string, now time.Time) Verdict {
	if repo != l.Repo {
		return Verdict{Decision: NotFound, Rule: "repo outside the lease"}
	}
	if branch != "" && branch != l.Branch {
		return Verdict{Decision: NotFound, Rule: "branch outside the lease"}
	}
	if key == "" {
		if l.AllowsAnywhere(a, now) {
			return Verdict{Decision: Allow, Rule: "repo " + repo}
		}
		return Verdict{Decision: Denied, Rule: fmt.Sprintf("action %s granted on no path", a)}
	}
	if !l.Visible(key, now) {
		return Verdict{Decision: NotFound, Rule: "no path glob matches"}
	}
	for _, r := range l.View {
		if slices.Contains(r.Actions, a) && glob.Match(r.Path, key) {
			return Verdict{Decision: Allow, Rule: "path " + r.Path}
		}
	}
	for _, g := range l.Grants {
		if g.Live(now) && slices.Contains(g.Actions, a) && glob.Match(g.Path, key) {
			v := Verdict{Decision: Allow, Rule: "grant " + g.ID, Grant: g.ID}
			if g.SingleUse {
				v.SingleUseGrant = g.ID
			}
			return v
		}
	}
	return Verdict{Decision: Denied, Rule: fmt.Sprintf("action %s not granted on this path", a)}
}
