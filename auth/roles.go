package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// PutRole creates or replaces a role.
func (s *Leases) PutRole(ctx context.Context, r lease.Role) (*lease.Role, error) {
	if err := lease.ValidRoleName(r.Name); err != nil {
		return nil, err
	}
	if r.Repo == "" {
		return nil, fmt.Errorf("role %s needs a repository: %w", r.Name, lease.ErrInvalid)
	}
	if r.Branch != "" && r.ForkFrom != "" {
		return nil, fmt.Errorf("role %s: give a branch or fork_from, not both: %w", r.Name, lease.ErrInvalid)
	}
	if r.Branch == "" && r.ForkFrom == "" {
		r.ForkFrom = "main"
	}
	view, err := lease.CleanView(r.View)
	if err != nil {
		return nil, err
	}
	r.View = view
	if r.MaxTTL == 0 {
		r.MaxTTL = lease.Duration(lease.MaxTTL)
	}
	if time.Duration(r.MaxTTL) > lease.MaxTTL || r.MaxTTL < 0 {
		return nil, fmt.Errorf("role %s: max ttl at most %s: %w", r.Name, lease.MaxTTL, lease.ErrInvalid)
	}
	if r.SensitivityMax != "" && !slices.Contains(lease.Sensitivities, r.SensitivityMax) {
		return nil, fmt.Errorf("sensitivity %q: %w", r.SensitivityMax, lease.ErrInvalid)
	}
	if err := r.BranchLimits.Validate(); err != nil {
		return nil, fmt.Errorf("role %s: %w", r.Name, err)
	}
	if r.BranchLimits != (lease.BranchLimits{}) && r.Branch != "" {
		return nil, fmt.Errorf("role %s: branch limits apply to forked run branches, not the fixed branch %s: %w", r.Name, r.Branch, lease.ErrInvalid)
	}
	if r.OIDC != nil {
		t, err := cleanTrust(*r.OIDC)
		if err != nil {
			return nil, fmt.Errorf("role %s: %w", r.Name, err)
		}
		r.OIDC = t
	}
	b, _ := json.Marshal(r)
	if err := s.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(roleKey(r.Name), b) }); err != nil {
		return nil, err
	}
	return &r, nil
}

// GetRole returns a role.
func (s *Leases) GetRole(ctx context.Context, name string) (*lease.Role, error) {
	var r lease.Role
	err := s.db.View(ctx, func(rd kv.Reader) error {
		b, err := rd.Get(roleKey(name))
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &r)
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("role %s: %w", name, lease.ErrNotFound)
	}
	return &r, err
}

// ListRoles returns every role in name order.
func (s *Leases) ListRoles(ctx context.Context) ([]lease.Role, error) {
	var out []lease.Role
	err := s.db.View(ctx, func(rd kv.Reader) error {
		return rd.Scan(kv.Prefix([]byte(keyspace.Role)), func(_, v []byte) error {
			var r lease.Role
			if err := json.Unmarshal(v, &r); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

// DeleteRole removes a role; leases issued under it stay valid.
func (s *Leases) DeleteRole(ctx context.Context, name string) error {
	if _, err := s.GetRole(ctx, name); err != nil {
		return err
	}
	return s.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(roleKey(name)) })
}

// cleanTrust checks a role's OIDC trust and keeps a static key set in
// canonical form, public keys only.
func cleanTrust(t lease.OIDCTrust) (*lease.OIDCTrust, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if len(t.JWKS) > 0 {
		_, canon, err := ParseJWKS(t.JWKS)
		if err != nil {
			return nil, err
		}
		t.JWKS = canon
	}
	return &t, nil
}
