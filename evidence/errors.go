package evidence

import "errors"

// ErrInvalid is returned when a string is not a well-formed pointer, or a
// Pointer's fields cannot be written as one (an empty path, no commit,
// lines out of order).
var ErrInvalid = errors.New("evidence: invalid pointer")
