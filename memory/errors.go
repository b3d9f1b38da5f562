package memory

import "errors"

// ErrInvalid is returned when a note, a note ID, a Home or a recall-test
// file is malformed or out of bounds.
var ErrInvalid = errors.New("memory: invalid")
