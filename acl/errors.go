package acl

import (
	"errors"
	"fmt"
)

// ErrInvalid is returned when a request's ACL cannot be accepted; the
// errors below wrap it.
var ErrInvalid = errors.New("acl: invalid")

var (
	// ErrUnknownCanned is returned by Canned for a name S3 does not define.
	ErrUnknownCanned = fmt.Errorf("unknown canned ACL: %w", ErrInvalid)
	// ErrMalformedGrant is returned by ParseGrantHeader for a value that
	// is not a list of id=, uri= or emailAddress= grantees.
	ErrMalformedGrant = fmt.Errorf("malformed grant header: %w", ErrInvalid)
	// ErrUnknownGrantee is returned by Check for a canonical ID other
	// than the owner's, or a group S3 does not define.
	ErrUnknownGrantee = fmt.Errorf("unknown grantee: %w", ErrInvalid)
	// ErrUnresolvableEmail is returned by Check for any e-mail grantee:
	// the gateway knows no account by e-mail address.
	ErrUnresolvableEmail = fmt.Errorf("no account has this e-mail address: %w", ErrInvalid)
)

// ErrCorrupt is returned by Decode for bytes Encode did not write.
var ErrCorrupt = errors.New("acl: corrupt encoding")
