package postform

import (
	"errors"
	"fmt"
)

// Each sentinel's comment names the S3 error the s3api layer answers
// with.
var (
	// ErrMalformed is returned when the body is not well-formed
	// multipart/form-data (MalformedPOSTRequest, 400).
	ErrMalformed = errors.New("postform: the body is not well-formed multipart/form-data")
	// ErrFieldsTooLarge is returned when the fields before the file
	// exceed MaxFields bytes (MaxPostPreDataLengthExceeded, 400).
	ErrFieldsTooLarge = errors.New("postform: the fields preceding the file are too large")
	// ErrNoFile is returned when the form has no file field
	// (InvalidArgument, 400).
	ErrNoFile = errors.New("postform: POST requires exactly one file upload per request")
	// ErrMissingField is returned, wrapped in a *FieldError, when a
	// required field is absent (InvalidArgument, 400).
	ErrMissingField = errors.New("postform: missing field")
	// ErrDuplicateField is returned, wrapped in a *FieldError, when a
	// field appears twice (InvalidArgument, 400): which value a policy
	// would have checked is ambiguous.
	ErrDuplicateField = errors.New("postform: duplicate field")
	// ErrInvalidPolicy is returned, wrapped in a *PolicyError, when the
	// policy cannot be decoded (InvalidPolicyDocument, 400).
	ErrInvalidPolicy = errors.New("postform: invalid policy document")
	// ErrPolicy is returned, wrapped in a *PolicyError, when the form does
	// not satisfy its policy: expired, a condition failed, a field no
	// condition covers (AccessDenied, 403).
	ErrPolicy = errors.New("postform: invalid according to policy")
	// ErrTooSmall is returned when the file is smaller than the policy's
	// content-length-range (EntityTooSmall, 400).
	ErrTooSmall = errors.New("postform: the file is smaller than the policy allows")
	// ErrTooLarge is returned when the file is larger than the policy's
	// content-length-range (EntityTooLarge, 400).
	ErrTooLarge = errors.New("postform: the file is larger than the policy allows")
)

// FieldError names the field a form lacks or repeats.
type FieldError struct {
	Field string // lower-case
	kind  error
}

func (e *FieldError) Error() string { return fmt.Sprintf("%v: %s", e.kind, e.Field) }

// Unwrap returns ErrMissingField or ErrDuplicateField.
func (e *FieldError) Unwrap() error { return e.kind }

// PolicyError says, in S3's words, why a policy was refused ("Policy
// expired.", "Extra input fields: acl", "Policy Condition failed:
// [\"eq\", \"$key\", \"a\"]", "Invalid JSON.").
type PolicyError struct {
	Reason string
	kind   error
}

func (e *PolicyError) Error() string { return e.kind.Error() + ": " + e.Reason }

// Unwrap returns ErrPolicy or ErrInvalidPolicy.
func (e *PolicyError) Unwrap() error { return e.kind }

func invalid(format string, args ...any) error {
	return &PolicyError{Reason: fmt.Sprintf(format, args...), kind: ErrInvalidPolicy}
}

func refused(format string, args ...any) error {
	return &PolicyError{Reason: fmt.Sprintf(format, args...), kind: ErrPolicy}
}
