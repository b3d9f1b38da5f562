package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/search"
	"github.com/agentnas/nas/sigv4"
)

// slowBody stands for the gateway's error of a body that stalled.
type slowBody struct{}

func (slowBody) Error() string { return "stalled" }
func (slowBody) Timeout() bool { return true }

// TestToError is the control API's translation table: every internal
// error a verb can return, to its status, code and reason, wrapped or
// not; anything unknown is a 500 that names nothing.
func TestToError(t *testing.T) {
	refusal := func(kind error) error {
		return fmt.Errorf("object/stat: %w: no path glob matches", kind)
	}
	for _, tc := range []struct {
		err          error
		status       int
		code, reason string
		retryable    bool
	}{
		{&Error{Status: 418, Code: "Teapot", Message: "m"}, 418, "Teapot", "", false},
		{sigv4.ErrMissingAuth, 403, apiv1.CodeUnauthenticated, "anonymous", false},
		{sigv4.ErrSignatureMismatch, 403, apiv1.CodeUnauthenticated, "signature", false},
		{fmt.Errorf("%w: %w", sigv4.ErrInvalidToken, lease.ErrExpired), 403, apiv1.CodeUnauthenticated, "expired", false},
		{fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, lease.ErrRevoked), 403, apiv1.CodeUnauthenticated, "revoked", false},
		{sigv4.ErrRequestTimeTooSkewed, 403, apiv1.CodeUnauthenticated, "clock_skew", false},
		{sigv4.ErrExpired, 403, apiv1.CodeUnauthenticated, "request_expired", false},
		{sigv4.ErrMissingDate, 403, apiv1.CodeUnauthenticated, "malformed", false},
		{sigv4.ErrInvalidContentSHA256, 400, apiv1.CodeInvalidArgument, "", false},
		{sigv4.ErrContentSHA256Mismatch, 400, apiv1.CodeInvalidArgument, "", false},
		{sigv4.ErrIncompleteBody, 400, apiv1.CodeInvalidArgument, "", false},
		{auth.ErrUnsignedHeaders, 403, apiv1.CodeUnauthenticated, "unsigned_headers", false},
		{auth.ErrUnsignedPayload, 403, apiv1.CodeUnauthenticated, "unsigned_payload", false},
		{fmt.Errorf("%w: ancestor", auth.ErrLeaseEnded), 403, apiv1.CodeUnauthenticated, "expired", false},
		{refusal(auth.ErrNotFound), 404, apiv1.CodeNotFound, "", false},
		{refusal(auth.ErrNoSuchBucket), 404, apiv1.CodeNotFound, "", false},
		{refusal(auth.ErrNoSuchVersion), 404, apiv1.CodeNotFound, "", false},
		{refusal(auth.ErrDenied), 403, apiv1.CodeAccessDenied, "", false},
		{refusal(auth.ErrOverBudget), 403, apiv1.CodeQuotaExceeded, "", false},
		{fmt.Errorf("%w: -1", auth.ErrInvalid), 400, apiv1.CodeInvalidArgument, "", false},
		{fmt.Errorf("%w: no #Lx-Ly", evidence.ErrInvalid), 400, apiv1.CodeInvalidArgument, "", false},
		{fmt.Errorf("%w: unclosed quote", search.ErrInvalid), 400, apiv1.CodeInvalidArgument, "", false},
		{branch.ErrProtected, 403, apiv1.CodeAccessDenied, "", false},
		{branch.ErrNoSuchKey, 404, apiv1.CodeNotFound, "", false},
		{branch.ErrNoSuchBranch, 404, apiv1.CodeNotFound, "", false},
		{manifest.ErrNoSuchCommit, 404, apiv1.CodeNotFound, "", false},
		{branch.ErrBranchExists, 409, apiv1.CodeAlreadyExists, "", false},
		{branch.ErrQuotaExceeded, 403, apiv1.CodeQuotaExceeded, "", false},
		{branch.ErrNothingToCommit, 409, apiv1.CodeNothingToCommit, "", false},
		{kv.ErrConflict, 409, apiv1.CodeConflict, "", true},
		{kv.ErrUnavailable, 503, "ServiceUnavailable", "", true},
		{fmt.Errorf("ingest: %w: 0 bytes free under /srv/nas", cas.ErrStorageFull), 507, apiv1.CodeStorageFull, "", false},
		{fmt.Errorf("segment: %w", &os.PathError{Op: "write", Path: "/srv/nas/x.seg", Err: syscall.ENOSPC}), 507, apiv1.CodeStorageFull, "", false},
		{lease.ErrWider, 400, apiv1.CodeInvalidArgument, "", false},
		{lease.ErrMalformedPolicy, 400, apiv1.CodeInvalidArgument, "", false},
		{lease.ErrNotFound, 404, apiv1.CodeNotFound, "", false},
		{manifest.ErrLazy, 501, apiv1.CodeNotImplemented, "", false},
		{fmt.Errorf("%w: lint", gate.ErrChecksPending), 409, apiv1.CodeChecksPending, "", false},
		{fmt.Errorf("%w: lint (fail)", gate.ErrChecksFailed), 409, apiv1.CodeChecksFailed, "", false},
		{fmt.Errorf("no check x: %w", check.ErrNotFound), 404, apiv1.CodeNotFound, "", false},
		{fmt.Errorf("command outside the folder: %w", check.ErrInvalid), 400, apiv1.CodeInvalidArgument, "", false},
		{context.Canceled, 499, "Canceled", "", true},
		{fmt.Errorf("read body: %w", slowBody{}), http.StatusRequestTimeout, apiv1.CodeRequestTimeout, "", true},
		{errors.New("disk on fire at /var/secret"), 500, apiv1.CodeInternalError, "", true},
	} {
		e := toError(tc.err)
		if e.Status != tc.status || e.Code != tc.code || e.Retryable != tc.retryable {
			t.Errorf("%v: %d %s retryable=%v, want %d %s %v", tc.err, e.Status, e.Code, e.Retryable, tc.status, tc.code, tc.retryable)
		}
		if r, _ := e.Details["reason"].(string); r != tc.reason {
			t.Errorf("%v: reason %q, want %q", tc.err, r, tc.reason)
		}
		if tc.code == apiv1.CodeStorageFull && strings.Contains(e.Message, "/srv/nas") {
			t.Errorf("a full disk's answer names the gateway's directories: %q", e.Message)
		}
		if tc.code == apiv1.CodeInternalError && e.Message != "internal error" {
			t.Errorf("an internal error leaks its text: %q", e.Message)
		}
	}
}
