package branch

import (
	"errors"
	"fmt"
)

// Categories; specific errors wrap one of them.
var (
	// ErrNotFound is returned when a repo, branch, key, version, commit or
	// upload does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists is returned when creating something that already exists.
	ErrExists = errors.New("already exists")
	// ErrConflict is returned when a precondition or a concurrent change
	// prevents the operation.
	ErrConflict = errors.New("conflict")
	// ErrInvalid is returned for malformed names and arguments.
	ErrInvalid = errors.New("invalid argument")
	// ErrProtected is returned for a direct write to a protected branch.
	ErrProtected = errors.New("branch is protected: it changes only through merges")
	// ErrImmutable is returned when deleting a committed, non-current
	// version: history cannot be rewritten.
	ErrImmutable = errors.New("committed history is immutable")
	// ErrQuotaExceeded is returned for a write that would take a branch
	// beyond its byte or object quota.
	ErrQuotaExceeded = errors.New("branch quota exceeded")
)

// Specific errors.
var (
	ErrNoSuchRepo       = fmt.Errorf("repository %w", ErrNotFound)
	ErrNoSuchBranch     = fmt.Errorf("branch %w", ErrNotFound)
	ErrNoSuchKey        = fmt.Errorf("key %w", ErrNotFound)
	ErrNoSuchVersion    = fmt.Errorf("version %w", ErrNotFound)
	ErrNoSuchUpload     = fmt.Errorf("upload %w", ErrNotFound)
	ErrNoSuchConfig     = fmt.Errorf("repository configuration %w", ErrNotFound)
	ErrRepoExists       = fmt.Errorf("repository %w", ErrExists)
	ErrBranchExists     = fmt.Errorf("branch %w", ErrExists)
	ErrRepoNotEmpty     = fmt.Errorf("repository is not empty: %w", ErrConflict)
	ErrPrecondition     = fmt.Errorf("precondition failed: %w", ErrConflict)
	ErrNothingToCommit  = fmt.Errorf("nothing to commit: %w", ErrConflict)
	ErrInvalidName      = fmt.Errorf("name: %w", ErrInvalid)
	ErrInvalidPart      = fmt.Errorf("part: %w", ErrInvalid)
	ErrInvalidPartOrder = fmt.Errorf("part order: %w", ErrInvalid)
	ErrEntityTooSmall   = fmt.Errorf("part too small: %w", ErrInvalid)
	ErrDefaultBranch    = fmt.Errorf("the default branch cannot be deleted: %w", ErrConflict)
	// ErrPeers refuses a collection the gateways sharing the metadata
	// store do not admit now: another one is collecting, or one of them
	// did not take part in time.
	ErrPeers = fmt.Errorf("the gateways on this metadata store do not admit a collection now: %w", ErrConflict)
)
