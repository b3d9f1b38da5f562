package sts

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/sigv4"
)

type timeoutErr struct{}

func (timeoutErr) Error() string { return "stalled" }
func (timeoutErr) Timeout() bool { return true }

// TestMapError is the STS edge's translation table.
func TestMapError(t *testing.T) {
	h := New(auth.New(auth.Config{}), nil, nil)
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{lease.ErrMalformedPolicy, 400, "MalformedPolicyDocument"},
		{fmt.Errorf("%w: wider", lease.ErrWider), 400, "ValidationError"},
		{branch.ErrInvalid, 400, "ValidationError"},
		{lease.ErrNotFound, 403, "AccessDenied"},
		{auth.ErrOverBudget, 403, "AccessDenied"},
		{auth.ErrUnsignedHeaders, 403, "AccessDenied"},
		{auth.ErrUnsignedPayload, 403, "IncompleteSignature"},
		{fmt.Errorf("%w: %w", sigv4.ErrInvalidToken, lease.ErrExpired), 400, "ExpiredToken"},
		{fmt.Errorf("%w: ancestor", auth.ErrLeaseEnded), 400, "ExpiredToken"},
		{fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, lease.ErrRevoked), 403, "InvalidClientTokenId"},
		{sigv4.ErrInvalidToken, 403, "InvalidClientTokenId"},
		{sigv4.ErrSignatureMismatch, 403, "SignatureDoesNotMatch"},
		{sigv4.ErrMissingAuth, 403, "MissingAuthenticationToken"},
		{sigv4.ErrRequestTimeTooSkewed, 400, "RequestExpired"},
		{sigv4.ErrMalformedAuth, 400, "IncompleteSignature"},
		{sigv4.ErrMissingDate, 400, "IncompleteSignature"},
		{sigv4.ErrInvalidContentSHA256, 400, "InvalidParameterValue"},
		{sigv4.ErrContentSHA256Mismatch, 400, "InvalidParameterValue"},
		{fmt.Errorf("%w: sig", auth.ErrInvalidIdentityToken), 400, "InvalidIdentityToken"},
		{fmt.Errorf("%w: exp", auth.ErrIdentityTokenExpired), 400, "ExpiredTokenException"},
		{fmt.Errorf("%w: down", auth.ErrIDPCommunication), 400, "IDPCommunicationError"},
		{fmt.Errorf("%w: role", auth.ErrNotTrusted), 403, "AccessDenied"},
		{auth.ErrRunTaken, 403, "AccessDenied"},
		{auth.ErrDenied, 403, "AccessDenied"},
		{fmt.Errorf("ttl: %w", auth.ErrInvalid), 400, "InvalidParameterValue"},
		{timeoutErr{}, 400, "RequestTimeout"},
		{errors.New("disk on fire"), 500, "InternalFailure"},
	} {
		e := h.mapError(tc.err)
		if e.Status != tc.status || e.Code != tc.code {
			t.Errorf("%v: %d %s, want %d %s", tc.err, e.Status, e.Code, tc.status, tc.code)
		}
	}
}
