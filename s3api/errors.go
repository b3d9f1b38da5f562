package s3api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/cors"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/postform"
	"github.com/agentnas/nas/seal"
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

// Error returns the code and message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// s3err is an Error of status, code and message.
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
		return s3err(http.StatusPreconditionFailed, "PreconditionFailed", msgPrecondition)
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
	errKeyNotUTF8        = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Object key names must be valid UTF-8")
	}
	errNoSuchBucket = func(b string) *Error {
		e := s3err(http.StatusNotFound, "NoSuchBucket", msgNoSuchBucket)
		e.Bucket = b
		return e
	}
	errIncompleteBody = func(msg string) *Error { return s3err(http.StatusBadRequest, "IncompleteBody", msg) }
	errInternal       = func() *Error {
		return s3err(http.StatusInternalServerError, "InternalError", msgInternal)
	}
	errServiceUnavailable = func(msg string) *Error { return s3err(http.StatusServiceUnavailable, "ServiceUnavailable", msg) }
	errNotModified        = func() *Error { return &Error{Status: http.StatusNotModified, Code: "NotModified"} }
	errInvalidPartNumber  = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
	}
	// errInvalidPartNumberOf: a GET's partNumber beyond the object's parts.
	errInvalidPartNumberOf = func(n, parts int) *Error {
		return s3err(http.StatusBadRequest, "InvalidPart", fmt.Sprintf("The requested partnumber %d is not satisfiable: the object has %d part(s)", n, parts))
	}
	errInvalidMaxKeys = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Provided max-keys not an integer or within integer range")
	}
	errInvalidEncodingType = func() *Error {
		return s3err(http.StatusBadRequest, "InvalidArgument", "Invalid Encoding Method specified in Request")
	}
)

// toS3 translates an internal error into the S3 error a client gets. This
// is the only translation table of the S3 edge: an *Error is answered as
// it is; anything else by the first row of s3Codes it matches, else
// InternalError.
func toS3(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	for i := range s3Codes {
		if c := &s3Codes[i]; c.matches(err) {
			msg := c.msg
			if c.detail != nil {
				msg += c.detail(err)
			}
			return s3err(c.status, c.code, msg)
		}
	}
	return errInternal()
}

// s3Code is one row of the S3 edge's translation table.
type s3Code struct {
	is     error              // the row matches errors.Is(err, is)...
	match  func(error) bool   // ...or, when is is nil, match(err)
	status int                // HTTP status
	code   string             // S3 error code
	msg    string             // the message, or its start when detail is set
	detail func(error) string // what of the error ends the message
}

// matches reports whether the row translates err.
func (c *s3Code) matches(err error) bool {
	if c.is != nil {
		return errors.Is(err, c.is)
	}
	return c.match(err)
}

// Messages the table shares with the errors the protocol layer raises.
const (
	msgInternal     = "We encountered an internal error. Please try again."
	msgPrecondition = "At least one of the pre-conditions you specified did not hold"
	msgNoSuchKey    = "The specified key does not exist."
	msgNoSuchBucket = "The specified bucket does not exist"
	msgMalformedXML = "The XML you provided was not well-formed or did not validate against our published schema."
)

// s3Codes is the translation table, walked in order: the first row an
// error matches answers it, so a specific error comes before the
// category it wraps, and a chain holding several errors (a lease error
// inside a signature error, say) gets the earlier row's answer.
var s3Codes = []s3Code{
	{is: context.Canceled, status: 499, code: "RequestCanceled", msg: "the client closed the connection"},
	{is: context.DeadlineExceeded, status: http.StatusServiceUnavailable, code: "SlowDown", msg: "request timed out; reduce your request rate"},

	// Browser forms (POST Object): the form, its signature fields and its
	// policy, in S3's words.
	{is: postform.ErrMalformed, status: http.StatusBadRequest, code: "MalformedPOSTRequest", msg: "The body of your POST request is not well-formed multipart/form-data."},
	{is: postform.ErrFieldsTooLarge, status: http.StatusBadRequest, code: "MaxPostPreDataLengthExceeded", msg: "Your POST request fields preceding the upload file were too large."},
	{is: postform.ErrNoFile, status: http.StatusBadRequest, code: "InvalidArgument", msg: "POST requires exactly one file upload per request."},
	{is: postform.ErrMissingField, status: http.StatusBadRequest, code: "InvalidArgument", detail: missingFormField},
	{is: postform.ErrDuplicateField, status: http.StatusBadRequest, code: "InvalidArgument", msg: "A POST form field may appear only once: ", detail: formField},
	{is: sigv4.ErrMalformedPost, status: http.StatusBadRequest, code: "InvalidArgument", detail: malformedPostField},
	{is: postform.ErrInvalidPolicy, status: http.StatusBadRequest, code: "InvalidPolicyDocument", msg: "Invalid Policy: ", detail: policyReason},
	{is: postform.ErrPolicy, status: http.StatusForbidden, code: "AccessDenied", msg: "Invalid according to Policy: ", detail: policyReason},
	{is: postform.ErrTooSmall, status: http.StatusBadRequest, code: "EntityTooSmall", msg: "Your proposed upload is smaller than the minimum allowed size"},
	{is: postform.ErrTooLarge, status: http.StatusBadRequest, code: "EntityTooLarge", msg: "Your proposed upload exceeds the maximum allowed size"},

	// Authentication and authorization (package auth).
	{is: auth.ErrUnsignedHeaders, status: http.StatusForbidden, code: "AccessDenied", msg: "There were headers present in the request which were not signed"},
	{is: auth.ErrUnsignedPayload, status: http.StatusForbidden, code: "AccessDenied", msg: "This endpoint requires a header-signed request with a signed payload"},
	{is: auth.ErrOverBudget, status: http.StatusForbidden, code: "QuotaExceeded", msg: "The lease's budget does not allow this request: ", detail: refusalRule},
	{is: auth.ErrNoSuchVersion, status: http.StatusNotFound, code: "NoSuchVersion", msg: "The specified version does not exist."},
	{is: auth.ErrNoSuchBucket, status: http.StatusNotFound, code: "NoSuchBucket", msg: msgNoSuchBucket},
	{is: auth.ErrNotFound, status: http.StatusNotFound, code: "NoSuchKey", msg: msgNoSuchKey},
	{is: auth.ErrDenied, status: http.StatusForbidden, code: "AccessDenied", msg: "Access Denied: ", detail: refusalRule},
	{is: auth.ErrInvalid, status: http.StatusBadRequest, code: "InvalidArgument", detail: errorText},
	{is: auth.ErrHandoff, status: http.StatusBadRequest, code: "InvalidArgument", detail: errorText},
	{is: lease.ErrExpired, status: http.StatusBadRequest, code: "ExpiredToken", msg: "The provided token has expired."},
	{is: sigv4.ErrMissingAuth, status: http.StatusForbidden, code: "AccessDenied", msg: "Access Denied: anonymous requests are not allowed"},
	{is: sigv4.ErrUnsupportedAuth, status: http.StatusBadRequest, code: "InvalidRequest", msg: "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256."},
	{is: sigv4.ErrMalformedPresign, status: http.StatusBadRequest, code: "AuthorizationQueryParametersError", detail: errorText},
	{is: sigv4.ErrMalformedAuth, status: http.StatusBadRequest, code: "AuthorizationHeaderMalformed", detail: errorText},
	{is: sigv4.ErrUnknownKey, status: http.StatusForbidden, code: "InvalidAccessKeyId", msg: "The AWS Access Key Id you provided does not exist in our records."},
	{is: sigv4.ErrInvalidToken, status: http.StatusBadRequest, code: "InvalidToken", msg: "The provided token is malformed or otherwise invalid."},
	{is: sigv4.ErrSignatureMismatch, status: http.StatusForbidden, code: "SignatureDoesNotMatch", msg: "The request signature we calculated does not match the signature you provided. Check your key and signing method."},
	{is: sigv4.ErrRequestTimeTooSkewed, status: http.StatusForbidden, code: "RequestTimeTooSkewed", msg: "The difference between the request time and the server's time is too large."},
	{is: sigv4.ErrExpired, status: http.StatusForbidden, code: "AccessDenied", msg: "Request has expired"},
	{is: sigv4.ErrMissingDate, status: http.StatusForbidden, code: "AccessDenied", msg: "AWS authentication requires a valid Date or x-amz-date header"},
	{is: sigv4.ErrContentSHA256Mismatch, status: http.StatusBadRequest, code: "XAmzContentSHA256Mismatch", msg: "The provided 'x-amz-content-sha256' header does not match what was computed."},
	{is: sigv4.ErrInvalidContentSHA256, status: http.StatusBadRequest, code: "InvalidArgument", detail: errorText},
	{is: sigv4.ErrIncompleteBody, status: http.StatusBadRequest, code: "IncompleteBody", msg: "You did not provide the number of bytes specified by the Content-Length HTTP header."},
	{is: sigv4.ErrMalformedChunk, status: http.StatusBadRequest, code: "InvalidRequest", msg: "malformed aws-chunked body: ", detail: errorText},

	// Bucket CORS documents.
	{is: cors.ErrInvalid, status: http.StatusBadRequest, code: "InvalidRequest", detail: corsReason},
	{is: cors.ErrMalformed, status: http.StatusBadRequest, code: "MalformedXML", msg: msgMalformedXML},

	// Checksums.
	{match: isChecksumMismatch, status: http.StatusBadRequest, code: "BadDigest", detail: checksumMismatch},
	{is: checksum.ErrBadDigest, status: http.StatusBadRequest, code: "BadDigest", msg: "The Content-MD5 you specified did not match what we received."},
	{is: checksum.ErrInvalidDigest, status: http.StatusBadRequest, code: "InvalidDigest", msg: "The Content-MD5 you specified is not valid."},
	{is: checksum.ErrChecksumMismatch, status: http.StatusBadRequest, code: "BadDigest", detail: errorText},
	{is: checksum.ErrInvalidChecksum, status: http.StatusBadRequest, code: "BadDigest", detail: errorText},
	{is: checksum.ErrInvalidAlgorithm, status: http.StatusBadRequest, code: "InvalidRequest", detail: errorText},
	{is: checksum.ErrMultipleChecksums, status: http.StatusBadRequest, code: "InvalidRequest", detail: errorText},
	{is: checksum.ErrMissingTrailer, status: http.StatusBadRequest, code: "MalformedTrailerError", msg: "The request contained trailing data that was not well-formed or did not conform to our published schema."},

	// ACLs (package acl): what a request sets must name known grantees.
	{is: acl.ErrUnresolvableEmail, status: http.StatusBadRequest, code: "UnresolvableGrantByEmailAddress", msg: "The e-mail address you provided does not match any account on record."},
	{is: acl.ErrInvalid, status: http.StatusBadRequest, code: "InvalidArgument", detail: errorText},

	// Branches and objects.
	{is: branch.ErrNoSuchRepo, status: http.StatusNotFound, code: "NoSuchBucket", msg: msgNoSuchBucket},
	{is: branch.ErrNoSuchBranch, status: http.StatusNotFound, code: "NoSuchBucket", msg: "The specified branch does not exist: ", detail: errorText},
	{is: branch.ErrNoSuchKey, status: http.StatusNotFound, code: "NoSuchKey", msg: msgNoSuchKey},
	{is: branch.ErrNoSuchVersion, status: http.StatusNotFound, code: "NoSuchVersion", msg: "The specified version does not exist."},
	{is: manifest.ErrNoSuchCommit, status: http.StatusNotFound, code: "NoSuchVersion", msg: "The specified version does not exist."},
	{is: branch.ErrNoSuchUpload, status: http.StatusNotFound, code: "NoSuchUpload", msg: "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."},
	{is: branch.ErrRepoExists, status: http.StatusConflict, code: "BucketAlreadyOwnedByYou", msg: "Your previous request to create the named bucket succeeded and you already own it."},
	{is: branch.ErrRepoNotEmpty, status: http.StatusConflict, code: "BucketNotEmpty", msg: "The bucket you tried to delete is not empty: ", detail: errorText},
	{is: branch.ErrPrecondition, status: http.StatusPreconditionFailed, code: "PreconditionFailed", msg: msgPrecondition},
	{is: branch.ErrProtected, status: http.StatusForbidden, code: "AccessDenied", msg: "Access Denied: ", detail: errorText},
	{is: branch.ErrImmutable, status: http.StatusForbidden, code: "AccessDenied", msg: "Access Denied: ", detail: errorText},
	{is: branch.ErrQuotaExceeded, status: http.StatusForbidden, code: "QuotaExceeded", msg: "The branch's quota does not allow this write: ", detail: errorText},
	{is: branch.ErrInvalidPartOrder, status: http.StatusBadRequest, code: "InvalidPartOrder", msg: "The list of parts was not in ascending order. Parts must be ordered by part number."},
	{is: branch.ErrInvalidPart, status: http.StatusBadRequest, code: "InvalidPart", msg: "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."},
	{is: branch.ErrEntityTooSmall, status: http.StatusBadRequest, code: "EntityTooSmall", msg: "Your proposed upload is smaller than the minimum allowed object size."},
	{is: branch.ErrInvalidName, status: http.StatusBadRequest, code: "InvalidBucketName", detail: errorText},
	{is: branch.ErrInvalid, status: http.StatusBadRequest, code: "InvalidArgument", detail: errorText},
	{is: branch.ErrConflict, status: http.StatusConflict, code: "OperationAborted", msg: msgConflict},
	{is: kv.ErrConflict, status: http.StatusConflict, code: "OperationAborted", msg: msgConflict},
	{is: cas.ErrCollected, status: http.StatusServiceUnavailable, code: "ServiceUnavailable", msg: "A chunk this write reuses was collected while it was written. Please retry."},
	{is: kv.ErrUnavailable, status: http.StatusServiceUnavailable, code: "ServiceUnavailable", msg: "The gateway's metadata store cannot be reached. Please retry later."},
	{is: kv.ErrTooBig, status: http.StatusBadRequest, code: "InvalidRequest", msg: "the request touches too many keys at once: ", detail: errorText},
	{is: cas.ErrCorrupt, status: http.StatusInternalServerError, code: "InternalError", msg: msgInternal},
	{match: cas.IsStorageFull, status: http.StatusInsufficientStorage, code: "StorageFull", msg: "The gateway's storage is full (or at its free-space floor): nothing of this write was stored. Retry once space has been freed."},

	// Sealed (sensitive) content.
	{is: keyring.ErrDestroyed, status: http.StatusForbidden, code: "InvalidObjectState", msg: "This object is sensitive and its key domain was destroyed by a forget: its bytes can no longer be read by anyone."},
	{is: branch.ErrNoKeys, status: http.StatusNotImplemented, code: "NotImplemented", msg: "This gateway keeps no keyring, so it cannot seal or open sensitive objects."},
	{is: seal.ErrOpen, status: http.StatusInternalServerError, code: "InternalError", msg: msgInternal},
	{is: keyring.ErrNoKey, status: http.StatusInternalServerError, code: "InternalError", msg: msgInternal},
	{is: manifest.ErrCorrupt, status: http.StatusInternalServerError, code: "InternalError", msg: msgInternal},

	// Attached sources (lazy entries). Messages name neither the remote nor
	// its credentials: a lease reading through the gateway learns nothing
	// of them.
	{is: source.ErrChanged, status: http.StatusConflict, code: "RemoteObjectChanged", msg: "This object lives in an attached source, and the source no longer holds the version this branch pinned (it was changed or deleted there). Nothing was served from the new version. The repository's owner can run `nas source refresh` to pin what the source holds now."},
	{is: source.ErrRemoved, status: http.StatusConflict, code: "RemoteSourceRemoved", msg: "This object lives in a source that was detached from the repository before the object was ever read, so its bytes are not available."},
	{is: source.ErrThrottled, status: http.StatusServiceUnavailable, code: "SlowDown", msg: "The attached source this object lives in is throttling the gateway; please reduce your request rate and retry."},
	{is: source.ErrUnavailable, status: http.StatusServiceUnavailable, code: "ServiceUnavailable", msg: msgSourceUnavailable},
	{is: source.ErrCorrupt, status: http.StatusServiceUnavailable, code: "ServiceUnavailable", msg: msgSourceUnavailable},
	{is: manifest.ErrLazy, status: http.StatusNotImplemented, code: "NotImplemented", msg: "this operation does not support objects of attached sources"},
	{match: isTimeout, status: http.StatusBadRequest, code: "RequestTimeout", msg: "Your socket connection to the server was not read from or written to within the timeout period: ", detail: errorText},
}

// Messages that two rows of the table share.
const (
	msgConflict          = "A conflicting conditional operation is currently in progress against this resource. Please try again."
	msgSourceUnavailable = "The attached source this object lives in could not be read (unreachable, failing, or its bytes did not verify); nothing was stored. Please retry later."
)

// errorText ends a message with the error itself.
func errorText(err error) string { return err.Error() }

// isChecksumMismatch reports a checksum the client sent that the body
// did not match.
func isChecksumMismatch(err error) bool {
	var mm *checksum.MismatchError
	return errors.As(err, &mm)
}

// checksumMismatch is S3's message for a checksum mismatch, naming the
// algorithm.
func checksumMismatch(err error) string {
	var mm *checksum.MismatchError
	errors.As(err, &mm)
	return fmt.Sprintf("The %s you specified did not match the calculated checksum.", mm.Algorithm)
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

// missingFieldText is S3's message for a form that lacks a field.
func missingFieldText(name string) string {
	return fmt.Sprintf("Bucket POST must contain a field named '%s'.  If it is specified, please check the order of the fields.", name)
}

// missingFormField is S3's message for a form without its key (or
// another field it needs).
func missingFormField(err error) string {
	var fe *postform.FieldError
	if errors.As(err, &fe) {
		return missingFieldText(fe.Field)
	}
	return err.Error()
}

// formField is the field a form repeats.
func formField(err error) string {
	var fe *postform.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return err.Error()
}

// malformedPostField says which signature field a form lacks or garbles.
func malformedPostField(err error) string {
	var fe *sigv4.PostFieldError
	switch {
	case !errors.As(err, &fe):
		return err.Error()
	case fe.Missing:
		return missingFieldText(fe.Field)
	}
	return fmt.Sprintf("Invalid %s: %s", fe.Field, fe.Problem)
}

// corsReason is why a CORS rule was refused, in S3's words.
func corsReason(err error) string {
	var re *cors.RuleError
	if errors.As(err, &re) {
		return re.Reason
	}
	return err.Error()
}

// policyReason is why a policy was refused, in S3's words.
func policyReason(err error) string {
	var pe *postform.PolicyError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return err.Error()
}
