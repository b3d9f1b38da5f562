package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/search"
	"github.com/agentnas/nas/sigv4"
)

// Error is a control-API error.
type Error struct {
	Status    int            `json:"-"`
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// toError is the control API's translation table.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	mk := func(status int, code string, retry bool) *Error {
		return &Error{Status: status, Code: code, Message: err.Error(), Retryable: retry}
	}
	switch {
	case errors.Is(err, sigv4.ErrMissingAuth), errors.Is(err, sigv4.ErrSignatureMismatch),
		errors.Is(err, sigv4.ErrUnknownKey), errors.Is(err, sigv4.ErrInvalidToken),
		errors.Is(err, sigv4.ErrExpired), errors.Is(err, sigv4.ErrRequestTimeTooSkewed),
		errors.Is(err, sigv4.ErrMalformedAuth), errors.Is(err, sigv4.ErrUnsupportedAuth),
		errors.Is(err, sigv4.ErrMissingDate),
		errors.Is(err, auth.ErrUnsignedHeaders), errors.Is(err, auth.ErrUnsignedPayload):
		e := mk(http.StatusForbidden, apiv1.CodeUnauthenticated, false)
		e.Details = map[string]any{"reason": auth.FailureReason(err)}
		return e
	case errors.Is(err, sigv4.ErrInvalidContentSHA256), errors.Is(err, sigv4.ErrContentSHA256Mismatch),
		errors.Is(err, sigv4.ErrMalformedChunk), errors.Is(err, sigv4.ErrIncompleteBody):
		return mk(http.StatusBadRequest, apiv1.CodeInvalidArgument, false)
	case errors.Is(err, auth.ErrLeaseEnded):
		e := mk(http.StatusForbidden, apiv1.CodeUnauthenticated, false)
		e.Details = map[string]any{"reason": "expired"}
		return e
	case errors.Is(err, auth.ErrNotFound):
		return mk(http.StatusNotFound, apiv1.CodeNotFound, false)
	case errors.Is(err, auth.ErrDenied):
		return mk(http.StatusForbidden, apiv1.CodeAccessDenied, false)
	case errors.Is(err, auth.ErrOverBudget):
		return mk(http.StatusForbidden, apiv1.CodeQuotaExceeded, false)
	case errors.Is(err, auth.ErrInvalid), errors.Is(err, evidence.ErrInvalid), errors.Is(err, search.ErrInvalid),
		errors.Is(err, label.ErrInvalid), errors.Is(err, auth.ErrHandoff):
		return mk(http.StatusBadRequest, apiv1.CodeInvalidArgument, false)
	case errors.Is(err, gate.ErrChecksPending):
		return mk(http.StatusConflict, apiv1.CodeChecksPending, false)
	case errors.Is(err, gate.ErrChecksFailed):
		return mk(http.StatusConflict, apiv1.CodeChecksFailed, false)
	case errors.Is(err, check.ErrInvalid):
		return mk(http.StatusBadRequest, apiv1.CodeInvalidArgument, false)
	case errors.Is(err, check.ErrNotFound):
		return mk(http.StatusNotFound, apiv1.CodeNotFound, false)
	case errors.Is(err, branch.ErrProtected), errors.Is(err, branch.ErrImmutable):
		return mk(http.StatusForbidden, apiv1.CodeAccessDenied, false)
	case errors.Is(err, branch.ErrNotFound), errors.Is(err, manifest.ErrNoSuchCommit):
		return mk(http.StatusNotFound, apiv1.CodeNotFound, false)
	case errors.Is(err, branch.ErrExists):
		return mk(http.StatusConflict, apiv1.CodeAlreadyExists, false)
	case errors.Is(err, keyring.ErrDestroyed):
		return mk(http.StatusGone, apiv1.CodeKeyDestroyed, false)
	case errors.Is(err, branch.ErrNoKeys):
		return mk(http.StatusNotImplemented, apiv1.CodeNotImplemented, false)
	case errors.Is(err, manifest.ErrLazy):
		return mk(http.StatusNotImplemented, apiv1.CodeNotImplemented, false)
	case errors.Is(err, branch.ErrQuotaExceeded):
		return mk(http.StatusForbidden, apiv1.CodeQuotaExceeded, false)
	case errors.Is(err, branch.ErrNothingToCommit):
		return mk(http.StatusConflict, apiv1.CodeNothingToCommit, false)
	case cas.IsStorageFull(err):
		// Not err's text: it names the gateway's directories.
		return &Error{Status: http.StatusInsufficientStorage, Code: apiv1.CodeStorageFull,
			Message: "the gateway's storage is full (or at its free-space floor): nothing of this write was stored; retry once space has been freed"}
	case errors.Is(err, kv.ErrUnavailable):
		return mk(http.StatusServiceUnavailable, "ServiceUnavailable", true)
	case errors.Is(err, branch.ErrConflict), errors.Is(err, kv.ErrConflict):
		return mk(http.StatusConflict, apiv1.CodeConflict, true)
	case errors.Is(err, branch.ErrInvalid), errors.Is(err, lease.ErrInvalid), errors.Is(err, lease.ErrWider),
		errors.Is(err, lease.ErrMalformedPolicy):
		return mk(http.StatusBadRequest, apiv1.CodeInvalidArgument, false)
	case errors.Is(err, lease.ErrNotFound):
		return mk(http.StatusNotFound, apiv1.CodeNotFound, false)
	case errors.Is(err, lease.ErrRevoked), errors.Is(err, lease.ErrExpired):
		return mk(http.StatusForbidden, "LeaseEnded", false)
	case errors.Is(err, context.Canceled):
		return mk(499, "Canceled", true)
	case isTimeout(err):
		return mk(http.StatusRequestTimeout, apiv1.CodeRequestTimeout, true)
	}
	return &Error{Status: http.StatusInternalServerError, Code: apiv1.CodeInternalError, Message: "internal error", Retryable: true}
}

// writeError writes e as the error document.
func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, apiv1.ErrorDocument{Error: &apiv1.Error{Code: e.Code, Message: e.Message, Retryable: e.Retryable,
		RequestID: e.RequestID, Details: e.Details}})
}
