package s3api

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// The S3 edge asks package auth every question about who may do what; it
// only translates the answers into S3 errors (toS3) and tells a lease
// what is left of its budgets.

// budgetHeaders tells a lease holder what is left, so a runtime can
// throttle itself before it hits the wall.
func (s *Server) budgetHeaders(req *request) {
	l := req.p.Lease
	if l == nil {
		return
	}
	r := s.auth.Remaining(req.ctx(), req.p)
	h := req.w.Header()
	for _, b := range []struct {
		name string
		v    int64
	}{
		{"x-nas-budget-remaining-bytes-read", r.BytesRead},
		{"x-nas-budget-remaining-bytes-written", r.BytesWritten},
		{"x-nas-budget-remaining-requests", r.Requests},
	} {
		if b.v >= 0 {
			h.Set(b.name, strconv.FormatInt(b.v, 10))
		}
	}
	h.Set("x-nas-lease-expires", l.ExpiresAt.UTC().Format(time.RFC3339))
}

// allow asks the door whether the request may do a on key of repo and br
// (key "" asks about the bucket). notFound is what a hidden key answers
// with; a hidden repository or branch answers NoSuchBucket.
func (s *Server) allow(req *request, a lease.Action, repo, br, key string, notFound *Error) error {
	return s.refusal(req, s.auth.Authorize(req.ctx(), req.p, a, auth.Target{Repo: repo, Branch: br, Key: key}), notFound)
}

// probe is allow for a read of metadata only (HEAD): a single-use grant
// is left for the GET that follows.
func (s *Server) probe(req *request, repo, br, key string, notFound *Error) error {
	return s.refusal(req, s.auth.Probe(req.ctx(), req.p, auth.Target{Repo: repo, Branch: br, Key: key}), notFound)
}

// refusal picks the not-found answer of the operation for a target
// outside the view; every other refusal goes through toS3.
func (s *Server) refusal(req *request, err error, notFound *Error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, auth.ErrNoSuchBucket):
		return errNoSuchBucket(req.bucket)
	case errors.Is(err, auth.ErrNotFound) && notFound != nil:
		return notFound
	}
	return err
}

// chargeRead charges the bytes of rng of entry e (of key in repo and br)
// to the lease before any is sent (a response that would overspend is
// refused whole) and records the read in the run's read manifest.
func (s *Server) chargeRead(req *request, repo, br, key string, e *manifest.Entry, rng byteRange) (*auth.Charge, error) {
	var rs []auth.Range
	if rng.length > 0 {
		rs = append(rs, auth.Range{Off: rng.start, Len: rng.length})
	}
	c, err := s.auth.Read(req.ctx(), req.p, auth.Target{Repo: repo, Branch: br, Key: key}, e, rs...)
	if err == nil {
		s.budgetHeaders(req)
	}
	return c, err
}

// chargeBody charges the request body (of at most limit bytes) to the
// lease before it is read; the charge is refunded if the write fails. A
// body of unknown length answers MissingContentLength, one over limit
// EntityTooLarge, before anything is charged.
func (s *Server) chargeBody(req *request, limit int64) (*auth.Charge, error) {
	n := req.auth.DecodedLength
	switch {
	case n < 0:
		return nil, errMissingLength()
	case n > limit:
		return nil, errEntityTooLarge(fmt.Sprintf("Your proposed upload exceeds the maximum allowed size of %d bytes.", limit))
	}
	return s.chargeWrite(req, n)
}

// chargeWrite charges n bytes written to the addressed key.
func (s *Server) chargeWrite(req *request, n int64) (*auth.Charge, error) {
	c, err := s.auth.Write(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch, Key: req.key}, n)
	if err == nil {
		s.budgetHeaders(req)
	}
	return c, err
}

// recordDelete writes a delete's intent record first; if it cannot be
// written the delete must not happen.
func (s *Server) recordDelete(req *request, key, versionID string) error {
	e := record.Event{Kind: record.KindDelete, Repo: req.repo, Branch: req.branch, Subject: record.Subject{Path: key, VersionID: versionID}}
	if err := s.auth.Record(req.ctx(), req.p, e); err != nil {
		return errServiceUnavailable("the flight recorder could not record this delete, so it was not performed")
	}
	return nil
}
