package client

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentnas/nas/apiv1"
)

// Error is a failed call: the gateway's answer (HTTP status and the S3 or
// control-API error code), or Code "Unreachable" when no answer came.
type Error struct {
	Op        string // method and URL, or the control-API operation
	Status    int    // 0 when the gateway was not reached
	Code      string // NoSuchKey, AccessDenied, QuotaExceeded, ExpiredToken, NotFound, ...
	Message   string
	RequestID string
	// Reason refines an authentication failure of the control API
	// ("expired", "revoked", "signature", ...), when the gateway says.
	Reason    string
	Retryable bool
	// Details is the control API's machine-readable context (the result
	// of a conflicting merge, the gate of a void approval, ...).
	Details map[string]any
	err     error
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: gateway unreachable: %s", e.Op, e.Message)
	}
	return fmt.Sprintf("%s: %d %s: %s", e.Op, e.Status, e.Code, e.Message)
}

// Unwrap returns the transport error of an unreachable gateway.
func (e *Error) Unwrap() error { return e.err }

// Code returns the error code of err if it is an *Error, else "".
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Retryable reports whether trying err's call again may succeed: the
// gateway was unreachable, failed (5xx) or asked to slow down.
func Retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Status == 0 && e.Retryable || e.Status >= 500 || e.Code == "SlowDown"
}

// parseError turns a failed response into an *Error: the control API's
// JSON error document, an S3 XML error, or the bare status (HEAD).
func parseError(op string, resp *http.Response) error {
	e := &Error{Op: op, Status: resp.StatusCode, RequestID: resp.Header.Get("x-amz-request-id")}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var doc apiv1.ErrorDocument
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	switch {
	case json.Unmarshal(data, &doc) == nil && doc.Error != nil:
		e.Code, e.Message, e.Retryable, e.Details = doc.Error.Code, doc.Error.Message, doc.Error.Retryable, doc.Error.Details
		if doc.Error.RequestID != "" {
			e.RequestID = doc.Error.RequestID
		}
		if r, ok := doc.Error.Details["reason"].(string); ok {
			e.Reason = r
		}
	case xml.Unmarshal(data, &x) == nil && x.Code != "":
		e.Code, e.Message = x.Code, x.Message
	default:
		e.Code, e.Message = statusCode(resp.StatusCode), resp.Status
	}
	return e
}

// statusCode names the S3 error a body-less answer stands for.
func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusForbidden:
		return "AccessDenied"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusNotModified:
		return "NotModified"
	case http.StatusRequestedRangeNotSatisfiable:
		return "InvalidRange"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	}
	return http.StatusText(status)
}
