package checksum

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidDigest is returned when Content-MD5 is not the base64 of 16
	// bytes. S3 code: InvalidDigest (400).
	ErrInvalidDigest = errors.New("checksum: malformed Content-MD5")
	// ErrBadDigest is returned by Set.Verify when the body's MD5 differs from
	// Content-MD5. S3 code: BadDigest (400).
	ErrBadDigest = errors.New("checksum: Content-MD5 does not match the body")
	// ErrInvalidChecksum is returned when an x-amz-checksum-* value (header or
	// trailer) or a part digest does not decode to the algorithm's digest
	// size. S3 code: InvalidRequest (400).
	ErrInvalidChecksum = errors.New("checksum: malformed checksum value")
	// ErrChecksumMismatch is returned (inside a *MismatchError naming the
	// algorithm) by Set.Verify when the computed checksum differs from the one
	// the client sent. S3 code: BadDigest (400), message "The <alg> you
	// specified did not match the calculated checksum."
	ErrChecksumMismatch = errors.New("checksum: checksum does not match the body")
	// ErrInvalidAlgorithm is returned when an algorithm name is not one S3
	// knows, or when CombineCRC is asked for a non-CRC algorithm. S3 code:
	// InvalidRequest (400).
	ErrInvalidAlgorithm = errors.New("checksum: invalid checksum algorithm")
	// ErrMissingTrailer is returned by Set.Verify when x-amz-trailer
	// announced a checksum trailer that never arrived. S3 code:
	// InvalidRequest (400); MalformedTrailerError also fits.
	ErrMissingTrailer = errors.New("checksum: announced checksum trailer is missing")
	// ErrMultipleChecksums is returned when a request carries more than one
	// checksum algorithm (two x-amz-checksum-* headers, a header plus a
	// trailer, or x-amz-sdk-checksum-algorithm naming another algorithm than
	// the value sent). S3 code: InvalidRequest (400).
	ErrMultipleChecksums = errors.New("checksum: more than one checksum algorithm")
)

// MismatchError is returned by Set.Verify when the body does not match the
// x-amz-checksum value the client sent; it wraps ErrChecksumMismatch and
// names the algorithm so the S3 message can be built from it.
type MismatchError struct {
	// Algorithm is the checksum that did not match.
	Algorithm Algorithm
}

// Error returns S3's wording for the mismatch.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("checksum: the %s you specified did not match the calculated checksum", e.Algorithm)
}

// Unwrap returns ErrChecksumMismatch so errors.Is matches the category.
func (e *MismatchError) Unwrap() error { return ErrChecksumMismatch }
