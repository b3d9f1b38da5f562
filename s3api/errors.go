package s3api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/sigv4"
	"github.com/agentnas/nas/source"
)

// Error is an S3 error response.
type Error struct {
	Code    string
	Message string
	Status  int
	// Extra elements of the error document (Key, BucketName, ...).
	Key, Bucket, VersionID string
	// Header is set on the response (e.g. x-amz-delete-marker).
	Header http.Header
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func s3err(status int, code, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg}
}

// Errors the protocol layer raises itself.
var (
	errAccessDenied       = func(msg string) *Error { return s3err(http.StatusForbidden, "AccessDenied", msg) }
	errInvalidArgument    = func(msg string) *Error { return s3err(http.StatusBadRequest, "InvalidArgument", msg) }
	errInvalidRequest     = func(msg string) *Error { return s3err(http.StatusBadRequest, "InvalidRequest", msg) }
	errMalformedXML       = func(msg string) *Error { return s3err(http.StatusBadRequest, "MalformedXML", msg) }
	errNotImplemented     = func(msg string) *Error { return s3err(http.StatusNotImplemented, "NotImplemented", msg) }
	errMethodNotAllowed   = func(msg string) *Error { return s3err(http.StatusMethodNotAllowed, "MethodNotAllowed", msg) }
	errPreconditionFailed = func() *Error {
		return s3err(http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
	}
	errInvalidRange = func() *Error {
		return s3err(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable")
	}
	errMissingLength = func() *Error {
		return s3err(http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header.")
	}
	errEntityTooLarge    = func(msg string) *Error { return s3err(http.StatusBadRequest, "EntityTooLarge", msg) }
	errInvalidBucketName = func(msg string) *Error { return s3err(http.StatusBadRequest, "InvalidBucketName", msg) }
	errKeyTooLong        = func() *Error { return s3err(http.StatusBadRequest, "KeyTooLongError", "Your key is too long") }
	errNoSuchBucket      = func(b string) *Error {
		e := s3err(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		e.Bucket = b
		return e
	}
	errIncompleteBody = func(msg string) *Error { return s3err(http.StatusBadRequest, "IncompleteBody", msg) }
	errInternal       = func() *Error {
		return s3err(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	}
	errServiceUnavailable = func(msg string) *Error { return s3err(http.StatusServiceUnavailable, "ServiceUnavailable", msg) }
	errNotModified        = func() *Error { return &Error{Status: http.StatusNotModified, Code: "NotModified"} }
	errInvalidPartNumber  = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
	}
	errInvalidMaxKeys = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Provided max-keys not an integer or within integer range")
	}
	errInvalidEncodingType = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Invalid Encoding Method specified in Request")
	}
)

// toS3 translates an internal error into the S3 error a client gets. This
// is the only translation table of the S3 edge.
func toS3(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var mm *checksum.MismatchError
	switch {
	case errors.Is(err, context.Canceled):
		return s3err(499, "RequestCanceled", "the client closed the connection")
	case errors.Is(err, context.DeadlineExceeded):
		return s3err(http.StatusServiceUnavailable, "SlowDown", "request timed out; reduce your request rate")

	// Authentication and authorization (package auth).
	case errors.Is(err, auth.ErrUnsignedHeaders):
		return errAccessDenied("There were headers present in the request which were not signed")
	case errors.Is(err, auth.ErrUnsignedPayload):
		return errAccessDenied("This endpoint requires a header-signed request with a signed payload")
	case errors.Is(err, auth.ErrOverBudget):
		return s3err(http.StatusForbidden, "QuotaExceeded", "The lease's budget does not allow this request: "+refusalRule(err))
	case errors.Is(err, auth.ErrNoSuchVersion):
		return s3err(http.StatusNotFound, "NoSuchVersion", "The specified version does not exist.")
	case errors.Is(err, auth.ErrNoSuchBucket):
		return s3err(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
	case errors.Is(err, auth.ErrNotFound):
		return noSuchKey()
	case errors.Is(err, auth.ErrDenied):
		return errAccessDenied("Access Denied: " + refusalRule(err))
	case errors.Is(err, auth.ErrInvalid):
		return errInvalidArgument(err.Error())
	case errors.Is(err, lease.ErrExpired):
		return s3err(http.StatusBadRequest, "ExpiredToken", "The provided token has expired.")
	case errors.Is(err, sigv4.ErrMissingAuth):
		return errAccessDenied("Access Denied: anonymous requests are not allowed")
	case errors.Is(err, sigv4.ErrUnsupportedAuth):
		return errInvalidRequest("The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
	case errors.Is(err, sigv4.ErrMalformedPresign):
		return s3err(http.StatusBadRequest, "AuthorizationQueryParametersError", err.Error())
	case errors.Is(err, sigv4.ErrMalformedAuth):
		return s3err(http.StatusBadRequest, "AuthorizationHeaderMalformed", err.Error())
	case errors.Is(err, sigv4.ErrUnknownKey):
		return s3err(http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
	case errors.Is(err, sigv4.ErrInvalidToken):
		return s3err(http.StatusBadRequest, "InvalidToken", "The provided token is malformed or otherwise invalid.")
	case errors.Is(err, sigv4.ErrSignatureMismatch):
		return s3err(http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	case errors.Is(err, sigv4.ErrRequestTimeTooSkewed):
		return s3err(http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the server's time is too large.")
	case errors.Is(err, sigv4.ErrExpired):
		return errAccessDenied("Request has expired")
	case errors.Is(err, sigv4.ErrMissingDate):
		return errAccessDenied("AWS authentication requires a valid Date or x-amz-date header")
	case errors.Is(err, sigv4.ErrContentSHA256Mismatch):
		return s3err(http.StatusBadRequest, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
	case errors.Is(err, sigv4.ErrInvalidContentSHA256):
		return errInvalidArgument(err.Error())
	case errors.Is(err, sigv4.ErrIncompleteBody):
		return errIncompleteBody("You did not provide the number of bytes specified by the Content-Length HTTP header.")
	case errors.Is(err, sigv4.ErrMalformedChunk):
		return errInvalidRequest("malformed aws-chunked body: " + err.Error())

	// Checksums.
	case errors.As(err, &mm):
		return s3err(http.StatusBadRequest, "BadDigest", fmt.Sprintf("The %s you specified did not match the calculated checksum.", mm.Algorithm))
	case errors.Is(err, checksum.ErrBadDigest):
		return s3err(http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.")
	case errors.Is(err, checksum.ErrInvalidDigest):
		return s3err(http.StatusBadRequest, "InvalidDigest", "The Content-MD5 you specified is not valid.")
	case errors.Is(err, checksum.ErrChecksumMismatch):
		return s3err(http.StatusBadRequest, "BadDigest", err.Error())
	case errors.Is(err, checksum.ErrInvalidChecksum),
		errors.Is(err, checksum.ErrInvalidAlgorithm),
		errors.Is(err, checksum.ErrMultipleChecksums):
		return errInvalidRequest(err.Error())
	case errors.Is(err, checksum.ErrMissingTrailer):
		return s3err(http.StatusBadRequest, "MalformedTrailerError", "The request contained trailing data that was not well-formed or did not conform to our published schema.")

	// Branches and objects.
	case errors.Is(err, branch.ErrNoSuchRepo):
		return s3err(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
	case errors.Is(err, branch.ErrNoSuchBranch):
		return s3err(http.StatusNotFound, "NoSuchBucket", "The specified branch does not exist: "+err.Error())
	case errors.Is(err, branch.ErrNoSuchKey):
		return s3err(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	case errors.Is(err, branch.ErrNoSuchVersion), errors.Is(err, manifest.ErrNoSuchCommit):
		return s3err(http.StatusNotFound, "NoSuchVersion", "The specified version does not exist.")
	case errors.Is(err, branch.ErrNoSuchUpload):
		return s3err(http.StatusNotFound, "NoSuchUpload", "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
	case errors.Is(err, branch.ErrRepoExists):
		return s3err(http.StatusConflict, "BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.")
	case errors.Is(err, branch.ErrRepoNotEmpty):
		return s3err(http.StatusConflict, "BucketNotEmpty", "The bucket you tried to delete is not empty: "+err.Error())
	case errors.Is(err, branch.ErrPrecondition):
		return errPreconditionFailed()
	case errors.Is(err, branch.ErrProtected):
		return errAccessDenied("Access Denied: " + err.Error())
	case errors.Is(err, branch.ErrImmutable):
		return errAccessDenied("Access Denied: " + err.Error())
	case errors.Is(err, branch.ErrQuotaExceeded):
		return s3err(http.StatusForbidden, "QuotaExceeded", "The branch's quota does not allow this write: "+err.Error())
	case errors.Is(err, branch.ErrInvalidPartOrder):
		return s3err(http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number.")
	case errors.Is(err, branch.ErrInvalidPart):
		return s3err(http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
	case errors.Is(err, branch.ErrEntityTooSmall):
		return s3err(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.")
	case errors.Is(err, branch.ErrInvalidName):
		return errInvalidBucketName(err.Error())
	case errors.Is(err, branch.ErrInvalid):
		return errInvalidArgument(err.Error())
	case errors.Is(err, branch.ErrConflict), errors.Is(err, kv.ErrConflict):
		return s3err(http.StatusConflict, "OperationAborted", "A conflicting conditional operation is currently in progress against this resource. Please try again.")
	case errors.Is(err, kv.ErrTooBig):
		return errInvalidRequest("the request touches too many keys at once: " + err.Error())
	case errors.Is(err, cas.ErrCorrupt), errors.Is(err, manifest.ErrCorrupt):
		return errInternal()

	// Attached sources (lazy entries). Messages name neither the remote nor
	// its credentials: a lease reading through the gateway learns nothing
	// of them.
	case errors.Is(err, source.ErrChanged):
		return s3err(http.StatusConflict, "RemoteObjectChanged", "This object lives in an attached source, and the source no longer holds the version this branch pinned (it was changed or deleted there). Nothing was served from the new version. The repository's owner can run `nas source refresh` to pin what the source holds now.")
	case errors.Is(err, source.ErrRemoved):
		return s3err(http.StatusConflict, "RemoteSourceRemoved", "This object lives in a source that was detached from the repository before the object was ever read, so its bytes are not available.")
	case errors.Is(err, source.ErrThrottled):
		return s3err(http.StatusServiceUnavailable, "SlowDown", "The attached source this object lives in is throttling the gateway; please reduce your request rate and retry.")
	case errors.Is(err, source.ErrUnavailable), errors.Is(err, source.ErrCorrupt):
		return errServiceUnavailable("The attached source this object lives in could not be read (unreachable, failing, or its bytes did not verify); nothing was stored. Please retry later.")
	case errors.Is(err, manifest.ErrLazy):
		return errNotImplemented("this operation does not support objects of attached sources")
	case isTimeout(err):
		return s3err(http.StatusBadRequest, "RequestTimeout", "Your socket connection to the server was not read from or written to within the timeout period: "+err.Error())
	}
	return errInternal()
}

// refusalRule is the rule an authorization refusal names.
func refusalRule(err error) string {
	var r *auth.Refusal
	if errors.As(err, &r) {
		return r.Rule
	}
	return err.Error()
}

// isTimeout reports a timeout reading the request (a body that stalled
// or trickled).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
