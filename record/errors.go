package record

import (
	"errors"
	"fmt"

	"github.com/agentnas/nas/kv"
)

// Categories; specific errors wrap one of them.
var (
	// ErrNotFound is returned when a record, commit or read manifest does
	// not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid is returned when an event or a read is malformed: empty
	// kind, a field over its size limit, invalid UTF-8, a negative range.
	ErrInvalid = errors.New("invalid argument")
	// ErrCorrupt is returned when a stored record, manifest page, summary or
	// head does not decode, or an index entry names a record that is
	// missing; Verify reports the same conditions as problems instead.
	ErrCorrupt = errors.New("flight recorder data is corrupt")
	// ErrTampered is returned by CheckAnchor when the stored chain no longer
	// holds the record an external anchor names.
	ErrTampered = errors.New("flight recorder was altered")
	// ErrClosed is returned by Manifests.Add and Manifests.Run after Close.
	ErrClosed = errors.New("read manifests are closed")
	// ErrAmbiguous is returned by Explain when a commit prefix matches
	// several commits.
	ErrAmbiguous = errors.New("ambiguous")
)

// ErrStop may be returned by a List or ReadManifest callback to end the
// stream early; the call then returns nil.
var ErrStop = kv.ErrStop

// Specific errors.
var (
	// ErrNoSuchRecord is returned by Get for a sequence number with no record.
	ErrNoSuchRecord = fmt.Errorf("record %w", ErrNotFound)
	// ErrNoSuchCommit is returned by Explain when no event names the commit.
	ErrNoSuchCommit = fmt.Errorf("commit %w in the flight recorder", ErrNotFound)
	// ErrNoSuchManifest is returned when a run has no flushed read manifest.
	ErrNoSuchManifest = fmt.Errorf("read manifest %w", ErrNotFound)
	// ErrAmbiguousCommit is returned by Explain for a commit prefix that
	// matches more than one commit of the repository.
	ErrAmbiguousCommit = fmt.Errorf("commit prefix is %w", ErrAmbiguous)
)
