package cors

import "errors"

// Each sentinel's comment names the S3 error the s3api layer answers
// with.
var (
	// ErrMalformed is returned when a document is not a well-formed
	// CORSConfiguration: bad XML, no rule, a rule without an origin or
	// method, more than MaxRules rules (MalformedXML, 400).
	ErrMalformed = errors.New("cors: malformed CORSConfiguration")
	// ErrInvalid is returned, wrapped in a *RuleError, when a
	// well-formed document holds a value S3 refuses: an unsupported
	// method, a pattern with two wildcards, an ID that is too long
	// (InvalidRequest, 400).
	ErrInvalid = errors.New("cors: invalid CORSConfiguration")
)

// RuleError says, in S3's words, what of a rule S3 refuses.
type RuleError struct {
	Err    error  // ErrMalformed or ErrInvalid
	Reason string // S3's message
}

// Error returns the reason.
func (e *RuleError) Error() string { return e.Err.Error() + ": " + e.Reason }

// Unwrap returns the category.
func (e *RuleError) Unwrap() error { return e.Err }

func invalid(reason string) error { return &RuleError{Err: ErrInvalid, Reason: reason} }

func malformed(reason string) error { return &RuleError{Err: ErrMalformed, Reason: reason} }
