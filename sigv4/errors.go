package sigv4

import (
	"errors"
	"fmt"
)

// Each sentinel's comment names the S3 error code (and HTTP status) the
// s3api layer answers with.
var (
	// ErrMissingAuth is returned when the request carries no signature at
	// all; the caller treats it as anonymous. S3 code when anonymous access
	// is refused: AccessDenied (403).
	ErrMissingAuth = errors.New("sigv4: request is not signed")
	// ErrUnsupportedAuth is returned for signatures other than
	// AWS4-HMAC-SHA256: Signature Version 2 ("AWS AK:sig", AWSAccessKeyId
	// query; package auth hands those to package sigv2 instead), SigV4a
	// (AWS4-ECDSA-P256-SHA256) or any other scheme. S3 code:
	// InvalidRequest (400) "Please use AWS4-HMAC-SHA256." (AccessDenied for
	// a presigned URL).
	ErrUnsupportedAuth = errors.New("sigv4: unsupported authorization mechanism, please use AWS4-HMAC-SHA256")
	// ErrMalformedAuth is returned when the Authorization header cannot be
	// parsed or is incomplete (bad Credential scope, SignedHeaders without
	// host, signature not 64 hex digits, both header and query
	// authentication). S3 code: AuthorizationHeaderMalformed (400).
	ErrMalformedAuth = errors.New("sigv4: malformed authorization")
	// ErrMalformedPresign is returned (wrapping ErrMalformedAuth) when the
	// X-Amz-* query parameters of a presigned URL are missing or invalid.
	// S3 code: AuthorizationQueryParametersError (400).
	ErrMalformedPresign = fmt.Errorf("%w: presigned query", ErrMalformedAuth)
	// ErrMalformedPost is returned (wrapping ErrMalformedAuth, inside a
	// *PostFieldError) when a POST form lacks a signature field or carries
	// one that cannot be parsed. S3 code: InvalidArgument (400).
	ErrMalformedPost = fmt.Errorf("%w: POST form", ErrMalformedAuth)
	// ErrUnknownKey is returned (wrapped by the SecretLookup) when the access
	// key does not exist. S3 code: InvalidAccessKeyId (403).
	ErrUnknownKey = errors.New("sigv4: unknown access key")
	// ErrInvalidToken is returned (wrapped by the SecretLookup) when the
	// session token is missing, malformed, expired or does not belong to the
	// access key. S3 code: InvalidToken (400), or ExpiredToken (400) when
	// the lookup says so.
	ErrInvalidToken = errors.New("sigv4: invalid session token")
	// ErrSignatureMismatch is returned when the request signature, a chunk
	// signature or the trailer signature does not match. S3 code:
	// SignatureDoesNotMatch (403).
	ErrSignatureMismatch = errors.New("sigv4: signature does not match")
	// ErrRequestTimeTooSkewed is returned when the request time is further
	// from the server clock than MaxSkew, or a presigned URL is dated too far
	// in the future. S3 code: RequestTimeTooSkewed (403).
	ErrRequestTimeTooSkewed = errors.New("sigv4: request time too skewed")
	// ErrExpired is returned when a presigned URL is used after
	// X-Amz-Date + X-Amz-Expires. S3 code: AccessDenied (403) "Request has
	// expired".
	ErrExpired = errors.New("sigv4: request has expired")
	// ErrContentSHA256Mismatch is returned by Result.Body at end of body when
	// the payload does not hash to x-amz-content-sha256. S3 code:
	// XAmzContentSHA256Mismatch (400).
	ErrContentSHA256Mismatch = errors.New("sigv4: x-amz-content-sha256 does not match the body")
	// ErrInvalidContentSHA256 is returned when x-amz-content-sha256 is
	// neither a hex SHA-256 nor one of the payload keywords, or is absent on
	// a header-signed request whose body is too large to hash first. S3
	// code: InvalidArgument (400) (InvalidRequest "Missing required header
	// for this request: x-amz-content-sha256" for the absent case).
	ErrInvalidContentSHA256 = errors.New("sigv4: invalid x-amz-content-sha256")
	// ErrIncompleteBody is returned by Result.Body when the body ends early:
	// a truncated aws-chunked stream or fewer decoded bytes than
	// x-amz-decoded-content-length. S3 code: IncompleteBody (400).
	ErrIncompleteBody = errors.New("sigv4: incomplete body")
	// ErrMalformedChunk is returned by Result.Body for aws-chunked framing
	// that cannot be parsed (bad chunk size or extension, missing chunk
	// signature, oversized header line or trailer section, bytes after the
	// final chunk, more decoded bytes than x-amz-decoded-content-length) and
	// by Verify for an invalid x-amz-decoded-content-length. S3 has no
	// dedicated code; answer InvalidRequest (400).
	ErrMalformedChunk = errors.New("sigv4: malformed aws-chunked body")
	// ErrMissingDate is returned when a header-signed request has neither a
	// valid X-Amz-Date nor a valid Date header. S3 code: AccessDenied (403)
	// "AWS authentication requires a valid Date or x-amz-date header".
	ErrMissingDate = errors.New("sigv4: missing or invalid date")
)
