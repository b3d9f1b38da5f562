package lease

import "errors"

var (
	// ErrNotFound is returned when a lease, role or grant does not exist.
	ErrNotFound = errors.New("lease: not found")
	// ErrInvalid is returned for malformed leases, roles, globs and
	// policies.
	ErrInvalid = errors.New("lease: invalid")
	// ErrMalformedPolicy is returned (wrapping ErrInvalid) when an STS
	// session policy holds anything but Allow statements of S3 actions
	// (S3 code: MalformedPolicyDocument).
	ErrMalformedPolicy = errors.New("lease: malformed policy document")
	// ErrWider is returned (wrapping ErrInvalid) when a child lease asks
	// for more than its parent or a lease for more than its role allows;
	// the message says what.
	ErrWider = errors.New("lease: wider than allowed")
	// ErrExpired is returned when credentials belong to an expired lease
	// (S3 code: ExpiredToken).
	ErrExpired = errors.New("lease: expired")
	// ErrRevoked is returned when credentials belong to a revoked lease
	// (S3 code: InvalidAccessKeyId).
	ErrRevoked = errors.New("lease: revoked")
	// ErrBadToken is returned when a session token is forged, malformed or
	// does not belong to the access key (S3 code: InvalidToken).
	ErrBadToken = errors.New("lease: invalid session token")
)
