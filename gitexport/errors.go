package gitexport

import (
	"errors"
	"fmt"
)

var (
	// ErrPath is returned when a Git path is not one that the key escaping
	// produces (so it names no key).
	ErrPath = errors.New("gitexport: not an escaped key path")
	// ErrFormat is returned when an export or a stream is not in a format
	// this version reads: no refs/tags/nas/export, an unknown version,
	// malformed JSON, records out of order.
	ErrFormat = errors.New("gitexport: not a nas export")
	// ErrMismatch is returned when an export does not verify: a blob does
	// not hash to its chunks, a metadata line or commit message is not
	// what the exported values give, a rebuilt tree root or commit ID
	// differs. The export was altered or is corrupt; nothing is imported.
	ErrMismatch = errors.New("gitexport: export does not verify")
	// ErrDestination is returned when export's destination exists and is
	// not an empty directory.
	ErrDestination = errors.New("gitexport: destination exists")
	// ErrRemote is returned when the other side of a dump stream reported
	// that it failed (an error record); the message is the other side's.
	ErrRemote = errors.New("gitexport: gateway refused")
)

func mismatchf(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrMismatch)
}

func formatf(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrFormat)
}
