package s3api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/sigv4"
)

// Principals: the owner (long-lived credentials from the configuration) or
// a lease (temporary credentials, resolved on every request from the
// lease's live state, so revocation and expiry apply at once).

type principalKey struct{}

// principalSlot carries the lease that LookupSecret resolved out of the
// signature check.
type principalSlot struct{ lease *lease.Lease }

// LookupSecret implements sigv4.SecretLookup.
func (s *Server) LookupSecret(ctx context.Context, accessKey, token string) (string, error) {
	if subtle.ConstantTimeCompare([]byte(accessKey), []byte(s.owner.AccessKey)) == 1 {
		if token != "" {
			return "", fmt.Errorf("owner credentials take no session token: %w", sigv4.ErrInvalidToken)
		}
		return s.owner.SecretKey, nil
	}
	if s.leases == nil || !auth.IsTemporary(accessKey) {
		return "", fmt.Errorf("%s: %w", accessKey, sigv4.ErrUnknownKey)
	}
	l, secret, err := s.leases.Resolve(ctx, accessKey, token)
	switch {
	case errors.Is(err, lease.ErrExpired):
		return "", fmt.Errorf("%w: %w", errExpiredToken, err)
	case errors.Is(err, lease.ErrRevoked):
		return "", fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, err)
	case errors.Is(err, lease.ErrBadToken):
		return "", fmt.Errorf("%w: %v", sigv4.ErrInvalidToken, err)
	case err != nil:
		return "", err
	}
	if slot, ok := ctx.Value(principalKey{}).(*principalSlot); ok {
		slot.lease = l
	}
	return secret, nil
}

// Principal authenticates a request (S3 or control API) and returns its
// lease, nil for the owner.
func (s *Server) Principal(r *http.Request) (*lease.Lease, *sigv4.Result, error) {
	slot := &principalSlot{}
	ctx := context.WithValue(r.Context(), principalKey{}, slot)
	res, err := s.verify.Verify(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	return slot.lease, res, nil
}

// Leases returns the lease store (nil when leases are off).
func (s *Server) Leases() *auth.Leases { return s.leases }

// errQuota answers a spent budget.
func errQuota(msg string) *Error {
	return s3err(http.StatusForbidden, "QuotaExceeded", "The lease's budget does not allow this request: "+msg)
}

// admit applies the lease's state and request budget once per request and
// binds the request to the lease's repository and branch: another branch
// (by header or alias) or repository does not exist for the lease.
func (s *Server) admit(req *request) error {
	l := req.lease
	if l == nil {
		return nil
	}
	v := s.leases.Admit(req.ctx(), l)
	s.budgetHeaders(req)
	switch v.Decision {
	case lease.Expired:
		return fmt.Errorf("%w: %s", errExpiredToken, v.Rule)
	case lease.OverBudget:
		s.deny(req, lease.Action("request"), req.key, v)
		return errQuota(v.Rule)
	}
	if req.branch == "" && (req.repo == "" || req.repo == l.Repo) {
		req.branch = l.Branch
	}
	return nil
}

// budgetHeaders tells a lease holder what is left, so a runtime can
// throttle itself before it hits the wall.
func (s *Server) budgetHeaders(req *request) {
	if req.lease == nil {
		return
	}
	r := s.leases.Remaining(req.ctx(), req.lease)
	h := req.w.Header()
	for name, v := range map[string]int64{
		"x-nas-budget-remaining-bytes-read":    r.BytesRead,
		"x-nas-budget-remaining-bytes-written": r.BytesWritten,
		"x-nas-budget-remaining-requests":      r.Requests,
	} {
		if v >= 0 {
			h.Set(name, strconv.FormatInt(v, 10))
		}
	}
	h.Set("x-nas-lease-expires", req.lease.ExpiresAt.UTC().Format(time.RFC3339))
}

// allow asks the authorization point whether the request's principal may
// do a on key of the addressed repository and branch (key "" asks about
// the bucket). notFound is the error a hidden target answers with.
func (s *Server) allow(req *request, a lease.Action, repo, branch, key string, notFound *Error) error {
	l := req.lease
	if l == nil {
		return nil
	}
	v := l.Check(a, repo, branch, key, time.Now())
	if v.Decision == lease.Allow && v.SingleUseGrant != "" && !req.consumed[v.SingleUseGrant] {
		// Consumed before acting, atomically: one request per grant.
		g, err := s.leases.ConsumeGrant(req.ctx(), l.ID, v.SingleUseGrant)
		if err != nil {
			v = lease.Verdict{Decision: lease.NotFound, Rule: "single-use grant already used or expired"}
		} else {
			if req.consumed == nil {
				req.consumed = map[string]bool{}
			}
			req.consumed[g.ID] = true
			if s.onGrantUsed != nil {
				s.onGrantUsed(req.ctx(), l, key, []lease.Grant{*g})
			}
		}
	}
	switch v.Decision {
	case lease.Allow:
		return nil
	case lease.NotFound:
		s.deny(req, a, key, v)
		if key == "" || repo != l.Repo || branch != "" && branch != l.Branch {
			return errNoSuchBucket(req.bucket)
		}
		return notFound
	default:
		s.deny(req, a, key, v)
		return errAccessDenied("Access Denied: the lease does not grant " + string(a) + " here")
	}
}

// deny records a refused request in the flight recorder.
func (s *Server) deny(req *request, a lease.Action, key string, v lease.Verdict) {
	if s.onDeny != nil {
		s.onDeny(req.ctx(), req.lease, string(a), req.repo, req.branch, key, v)
	}
}

// reserveRead charges n bytes of a response to the lease before any is
// sent; a response that would overspend is refused whole.
func (s *Server) reserveRead(req *request, n int64) error {
	if req.lease == nil || n == 0 {
		return nil
	}
	if v := s.leases.ReserveRead(req.ctx(), req.lease, n); v.Decision != lease.Allow {
		s.deny(req, lease.Read, req.key, v)
		return errQuota(v.Rule)
	}
	s.budgetHeaders(req)
	return nil
}

// reserveWrite charges n bytes of a request body to the lease before it is
// read; release gives them back if the write fails.
func (s *Server) reserveWrite(req *request, n int64) (release func(), err error) {
	if req.lease == nil || n <= 0 {
		return func() {}, nil
	}
	if v := s.leases.ReserveWrite(req.ctx(), req.lease, n); v.Decision != lease.Allow {
		s.deny(req, lease.Write, req.key, v)
		return nil, errQuota(v.Rule)
	}
	s.budgetHeaders(req)
	return func() { s.leases.Refund(context.WithoutCancel(req.ctx()), req.lease, 0, n) }, nil
}

// recordRead adds a read of key to the run's read manifest.
func (s *Server) recordRead(req *request, repo, branch, key string, e *manifest.Entry, rng byteRange) {
	if req.lease == nil || s.onRead == nil {
		return
	}
	s.onRead(req.ctx(), req.lease, repo, branch, key, e, rng.start, rng.length)
}
