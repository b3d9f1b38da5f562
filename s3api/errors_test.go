package s3api

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/cors"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/postform"
	"github.com/agentnas/nas/sigv4"
	"github.com/agentnas/nas/source"
)

type timeoutErr struct{}

func (timeoutErr) Error() string { return "the request body stalled" }
func (timeoutErr) Timeout() bool { return true }

// TestToS3 is the S3 edge's translation table: every internal error, to
// the status and code S3 clients know; anything unknown is InternalError.
func TestToS3(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("GET x: %w", err) }
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{errAccessDenied("x"), 403, "AccessDenied"},
		{errInvalidTag("x"), 400, "InvalidTag"},
		{errNoSuchTagSet(), 404, "NoSuchTagSet"},
		{errMalformedACL(), 400, "MalformedACLError"},
		{errMissingSecurityHeader(), 400, "MissingSecurityHeader"},
		{wrap(fmt.Errorf("%q: %w", "x@y", acl.ErrUnresolvableEmail)), 400, "UnresolvableGrantByEmailAddress"},
		{wrap(acl.ErrUnknownGrantee), 400, "InvalidArgument"},
		{wrap(acl.ErrUnknownCanned), 400, "InvalidArgument"},
		{wrap(acl.ErrMalformedGrant), 400, "InvalidArgument"},
		{errNoSuchCORSConfiguration(), 404, "NoSuchCORSConfiguration"},
		{errCORSNotAllowed(), 403, "AccessForbidden"},
		{errBadRequest("x"), 400, "BadRequest"},
		{cors.ErrMalformed, 400, "MalformedXML"},
		{cors.ErrInvalid, 400, "InvalidRequest"},
		{context.Canceled, 499, "RequestCanceled"},
		{sigv4.ErrMissingAuth, 403, "AccessDenied"},
		{sigv4.ErrUnsupportedAuth, 400, "InvalidRequest"},
		{sigv4.ErrMalformedPresign, 400, "AuthorizationQueryParametersError"},
		{sigv4.ErrMalformedAuth, 400, "AuthorizationHeaderMalformed"},
		{sigv4.ErrUnknownKey, 403, "InvalidAccessKeyId"},
		{fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, lease.ErrRevoked), 403, "InvalidAccessKeyId"},
		{fmt.Errorf("%w: %w", sigv4.ErrInvalidToken, lease.ErrExpired), 400, "ExpiredToken"},
		{fmt.Errorf("%w: ancestor", auth.ErrLeaseEnded), 400, "ExpiredToken"},
		{sigv4.ErrInvalidToken, 400, "InvalidToken"},
		{sigv4.ErrSignatureMismatch, 403, "SignatureDoesNotMatch"},
		{sigv4.ErrRequestTimeTooSkewed, 403, "RequestTimeTooSkewed"},
		{sigv4.ErrExpired, 403, "AccessDenied"},
		{sigv4.ErrContentSHA256Mismatch, 400, "XAmzContentSHA256Mismatch"},
		{sigv4.ErrIncompleteBody, 400, "IncompleteBody"},
		{auth.ErrUnsignedHeaders, 403, "AccessDenied"},
		{auth.ErrUnsignedPayload, 403, "AccessDenied"},
		{auth.ErrOverBudget, 403, "QuotaExceeded"},
		{auth.ErrNoSuchVersion, 404, "NoSuchVersion"},
		{auth.ErrNoSuchBucket, 404, "NoSuchBucket"},
		{auth.ErrNotFound, 404, "NoSuchKey"},
		{auth.ErrDenied, 403, "AccessDenied"},
		{auth.ErrInvalid, 400, "InvalidArgument"},
		{checksum.ErrBadDigest, 400, "BadDigest"},
		{checksum.ErrInvalidDigest, 400, "InvalidDigest"},
		{branch.ErrNoSuchRepo, 404, "NoSuchBucket"},
		{branch.ErrNoSuchBranch, 404, "NoSuchBucket"},
		{branch.ErrNoSuchKey, 404, "NoSuchKey"},
		{branch.ErrNoSuchVersion, 404, "NoSuchVersion"},
		{manifest.ErrNoSuchCommit, 404, "NoSuchVersion"},
		{branch.ErrNoSuchUpload, 404, "NoSuchUpload"},
		{branch.ErrRepoExists, 409, "BucketAlreadyOwnedByYou"},
		{branch.ErrRepoNotEmpty, 409, "BucketNotEmpty"},
		{branch.ErrPrecondition, 412, "PreconditionFailed"},
		{branch.ErrProtected, 403, "AccessDenied"},
		{branch.ErrImmutable, 403, "AccessDenied"},
		{branch.ErrQuotaExceeded, 403, "QuotaExceeded"},
		{branch.ErrInvalidPartOrder, 400, "InvalidPartOrder"},
		{branch.ErrInvalidPart, 400, "InvalidPart"},
		{branch.ErrEntityTooSmall, 400, "EntityTooSmall"},
		{branch.ErrInvalid, 400, "InvalidArgument"},
		{kv.ErrConflict, 409, "OperationAborted"},
		{kv.ErrUnavailable, 503, "ServiceUnavailable"},
		{cas.ErrCollected, 503, "ServiceUnavailable"},
		{source.ErrChanged, 409, "RemoteObjectChanged"},
		{source.ErrRemoved, 409, "RemoteSourceRemoved"},
		{source.ErrThrottled, 503, "SlowDown"},
		{source.ErrUnavailable, 503, "ServiceUnavailable"},
		{manifest.ErrLazy, 501, "NotImplemented"},
		{postform.ErrMalformed, 400, "MalformedPOSTRequest"},
		{postform.ErrFieldsTooLarge, 400, "MaxPostPreDataLengthExceeded"},
		{postform.ErrNoFile, 400, "InvalidArgument"},
		{postform.ErrMissingField, 400, "InvalidArgument"},
		{postform.ErrDuplicateField, 400, "InvalidArgument"},
		{sigv4.ErrMalformedPost, 400, "InvalidArgument"},
		{&sigv4.PostFieldError{Field: "x-amz-date", Problem: "bad"}, 400, "InvalidArgument"},
		{postform.ErrInvalidPolicy, 400, "InvalidPolicyDocument"},
		{postform.ErrPolicy, 403, "AccessDenied"},
		{postform.ErrTooSmall, 400, "EntityTooSmall"},
		{postform.ErrTooLarge, 400, "EntityTooLarge"},
		{timeoutErr{}, 400, "RequestTimeout"},
		{errors.New("disk on fire"), 500, "InternalError"},
	} {
		for _, err := range []error{tc.err, wrap(tc.err)} {
			e := toS3(err)
			if e.Status != tc.status || e.Code != tc.code {
				t.Errorf("%v: %d %s, want %d %s", err, e.Status, e.Code, tc.status, tc.code)
			}
		}
	}
}

// TestToS3FormMessages: the refusals of POST forms read as S3's.
func TestToS3FormMessages(t *testing.T) {
	for _, tc := range []struct {
		err error
		msg string
	}{
		{fmt.Errorf("post: %w", &sigv4.PostFieldError{Field: "x-amz-signature", Missing: true}),
			"Bucket POST must contain a field named 'x-amz-signature'.  If it is specified, please check the order of the fields."},
		{(&postform.Form{}).Require("key"), "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields."},
		{func() error { _, err := postform.Decode("e30="); return err }(), "Invalid Policy: Policy missing expiration."},
		{func() error {
			_, err := cors.Decode([]byte("<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod></CORSRule></CORSConfiguration>"))
			return err
		}(), "Found unsupported HTTP method in CORS config. Unsupported method is PATCH"},
	} {
		if got := toS3(tc.err).Message; got != tc.msg {
			t.Errorf("%v: %q, want %q", tc.err, got, tc.msg)
		}
	}
}
