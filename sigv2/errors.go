package sigv2

import "github.com/agentnas/nas/sigv4"

// The errors of Verify. Each wraps the sigv4 sentinel whose S3 code it
// answers with, so edges match them with errors.Is(err, sigv4.ErrX).
var (
	// ErrMalformedAuth is returned when "AWS AccessKeyId:Signature" cannot
	// be parsed (no colon, empty key, a signature that is not base64 of 20
	// bytes), for several Authorization headers, and for header and query
	// authentication at once. Wraps sigv4.ErrMalformedAuth:
	// AuthorizationHeaderMalformed (400).
	ErrMalformedAuth error = &sentinel{"sigv2: malformed authorization", sigv4.ErrMalformedAuth}
	// ErrMalformedQuery is returned when AWSAccessKeyId, Signature or
	// Expires is missing, repeated or invalid, or Expires lies more than
	// MaxPresignAge ahead. Wraps sigv4.ErrMalformedPresign:
	// AuthorizationQueryParametersError (400).
	ErrMalformedQuery error = &sentinel{"sigv2: malformed presigned query", sigv4.ErrMalformedPresign}
	// ErrSignatureMismatch is returned when the signature does not match.
	// Wraps sigv4.ErrSignatureMismatch: SignatureDoesNotMatch (403).
	ErrSignatureMismatch error = &sentinel{"sigv2: signature does not match", sigv4.ErrSignatureMismatch}
	// ErrExpired is returned when a presigned URL is used after Expires.
	// Wraps sigv4.ErrExpired: AccessDenied (403) "Request has expired".
	ErrExpired error = &sentinel{"sigv2: request has expired", sigv4.ErrExpired}
	// ErrRequestTimeTooSkewed is returned when the request time is further
	// from the server clock than the skew allowed. Wraps
	// sigv4.ErrRequestTimeTooSkewed: RequestTimeTooSkewed (403).
	ErrRequestTimeTooSkewed error = &sentinel{"sigv2: request time too skewed", sigv4.ErrRequestTimeTooSkewed}
	// ErrMissingDate is returned when a header-signed request has neither
	// a valid x-amz-date nor a valid Date. Wraps sigv4.ErrMissingDate:
	// AccessDenied (403).
	ErrMissingDate error = &sentinel{"sigv2: missing or invalid date", sigv4.ErrMissingDate}
	// ErrPayload is returned when a request asks for what SigV2 cannot
	// give: an x-amz-content-sha256 other than UNSIGNED-PAYLOAD,
	// x-amz-decoded-content-length, or aws-chunked Content-Encoding. Wraps
	// sigv4.ErrInvalidContentSHA256: InvalidArgument (400).
	ErrPayload error = &sentinel{"sigv2: payload hashes and aws-chunked bodies need Signature Version 4", sigv4.ErrInvalidContentSHA256}
)

// sentinel is an error of this package that reads as its own and is its
// sigv4 category for errors.Is.
type sentinel struct {
	msg  string
	kind error
}

func (e *sentinel) Error() string { return e.msg }

// Unwrap returns the sigv4 category.
func (e *sentinel) Unwrap() error { return e.kind }
