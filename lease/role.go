package lease

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentnas/nas/glob"
)

// Role is the owner's envelope for leases issued through STS AssumeRole:
// which repository, which branch (a fixed one, or a fork per run), the
// widest view, the longest lifetime and the budgets.
type Role struct {
	Name     string `json:"name"`
	Repo     string `json:"repo"`
	Branch   string `json:"branch,omitempty"`    // fixed branch, or
	ForkFrom string `json:"fork_from,omitempty"` // fork ROLE/RUN from this ref per run
	// ProposeInto names the branches the role's runs may propose into,
	// besides the branch their own was forked from.
	ProposeInto    []string `json:"propose_into,omitempty"`
	View           []Rule   `json:"view"`
	MaxTTL         Duration `json:"max_ttl"`
	Budgets        Budgets  `json:"budgets"`
	SensitivityMax string   `json:"sensitivity_max,omitempty"`
	Egress         bool     `json:"egress,omitempty"`
	RequiresGate   []string `json:"requires_gate,omitempty"`
	Principal      string   `json:"principal,omitempty"`
	OnBehalfOf     string   `json:"on_behalf_of,omitempty"`
	// OIDC, when set, lets workloads holding a token of that issuer
	// assume the role without a key (AssumeRoleWithWebIdentity).
	OIDC *OIDCTrust `json:"oidc,omitempty"`
	// BranchLimits bound the branches forked for the role's runs.
	BranchLimits
}

// BranchLimits are the time to live and quotas of a run's branch.
type BranchLimits struct {
	TTL          Duration `json:"branch_ttl,omitempty"`
	QuotaBytes   int64    `json:"branch_quota_bytes,omitempty"`
	QuotaObjects int64    `json:"branch_quota_objects,omitempty"`
}

// ExpiresAt returns when a run's branch forked now for a lease of leaseTTL
// expires: after the branch TTL, but never before the lease, so a run's
// work is never recycled under it. Zero when there is no branch TTL.
func (b BranchLimits) ExpiresAt(now time.Time, leaseTTL time.Duration) time.Time {
	if b.TTL <= 0 {
		return time.Time{}
	}
	if leaseTTL <= 0 {
		leaseTTL = DefaultTTL
	}
	return now.Add(max(time.Duration(b.TTL), leaseTTL))
}

// Validate refuses negative limits.
func (b BranchLimits) Validate() error {
	if b.TTL < 0 || b.QuotaBytes < 0 || b.QuotaObjects < 0 {
		return fmt.Errorf("branch_ttl and branch quotas must not be negative: %w", ErrInvalid)
	}
	return nil
}

// Duration is a time.Duration that reads and writes as "1h30m" in JSON.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ValidRoleName checks a role name: a role names branches (ROLE/RUN), so it follows branch
// segment rules.
func ValidRoleName(n string) error {
	if n == "" || len(n) > 64 {
		return fmt.Errorf("role name %q: 1-64 characters: %w", n, ErrInvalid)
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '-' || c == '_' || c == '.')) {
			return fmt.Errorf("role name %q: [a-z0-9][a-z0-9._-]*: %w", n, ErrInvalid)
		}
	}
	return nil
}

// WithinRole checks that a requested view, lifetime and budgets fit the
// role's envelope and fills what the request left open from it.
func (r *Role) WithinRole(req *Request) error {
	if len(req.View) == 0 {
		req.View = r.View
	}
	for _, rule := range req.View {
		for _, a := range rule.Actions {
			ok := false
			for _, env := range r.View {
				if slices.Contains(env.Actions, a) && glob.Covers(env.Path, glob.Clean(rule.Path)) {
					ok = true
					break
				}
			}
			if !ok {
				return fmt.Errorf("%w: %s on %q is outside role %s", ErrWider, a, rule.Path, r.Name)
			}
		}
	}
	if req.TTL == 0 {
		req.TTL = min(DefaultTTL, time.Duration(r.MaxTTL))
	}
	if req.TTL > time.Duration(r.MaxTTL) {
		return fmt.Errorf("%w: duration %s exceeds role %s's %s", ErrWider, req.TTL, r.Name, time.Duration(r.MaxTTL))
	}
	for _, b := range []struct {
		name      string
		env, want *int64
	}{
		{"bytes_read", &r.Budgets.BytesRead, &req.Budgets.BytesRead},
		{"bytes_written", &r.Budgets.BytesWritten, &req.Budgets.BytesWritten},
		{"requests", &r.Budgets.Requests, &req.Budgets.Requests},
	} {
		if *b.env == 0 {
			continue
		}
		if *b.want == 0 {
			*b.want = *b.env
		} else if *b.want > *b.env {
			return fmt.Errorf("%w: %s budget exceeds role %s's %d", ErrWider, b.name, r.Name, *b.env)
		}
	}
	if req.SensitivityMax == "" {
		req.SensitivityMax = r.SensitivityMax
	}
	req.Egress = req.Egress && r.Egress
	req.RequiresGate = append(req.RequiresGate, r.RequiresGate...)
	if req.Principal == "" {
		req.Principal = r.Principal
	}
	if req.OnBehalfOf == "" {
		req.OnBehalfOf = r.OnBehalfOf
	}
	req.Role = r.Name
	req.Repo = r.Repo
	return nil
}
