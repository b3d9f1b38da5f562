package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"hash"
	"hash/crc32"
	"strings"

	"github.com/minio/crc64nvme"
)

// Algorithm names an S3 checksum function, spelled as S3 spells it.
type Algorithm string

// The checksum algorithms S3 accepts.
const (
	// CRC32 is the IEEE CRC-32 (zlib, Ethernet).
	CRC32 Algorithm = "CRC32"
	// CRC32C is the Castagnoli CRC-32.
	CRC32C Algorithm = "CRC32C"
	// CRC64NVME is the CRC-64 of the NVMe specification.
	CRC64NVME Algorithm = "CRC64NVME"
	// SHA1 is SHA-1.
	SHA1 Algorithm = "SHA1"
	// SHA256 is SHA-256.
	SHA256 Algorithm = "SHA256"
)

// Algorithms lists every supported algorithm in a fixed order.
var Algorithms = []Algorithm{CRC32, CRC32C, CRC64NVME, SHA1, SHA256}

// headerPrefix starts every checksum header and trailer name.
const headerPrefix = "x-amz-checksum-"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Parse returns the Algorithm named by s, ignoring case. It returns an error
// wrapping ErrInvalidAlgorithm for any other name.
func Parse(s string) (Algorithm, error) {
	for _, a := range Algorithms {
		if strings.EqualFold(s, string(a)) {
			return a, nil
		}
	}
	return "", fmt.Errorf("%w: %q", ErrInvalidAlgorithm, s)
}

// Valid reports whether a is one of the supported algorithms.
func (a Algorithm) Valid() bool {
	switch a {
	case CRC32, CRC32C, CRC64NVME, SHA1, SHA256:
		return true
	}
	return false
}

// Header returns the lower-case header (and trailer) name carrying a's
// value, such as "x-amz-checksum-crc32".
func (a Algorithm) Header() string {
	return headerPrefix + strings.ToLower(string(a))
}

// New returns a fresh hash computing a. Its Sum is the big-endian digest S3
// encodes in base64. New panics if a is not Valid.
func (a Algorithm) New() hash.Hash {
	switch a {
	case CRC32:
		return crc32.NewIEEE()
	case CRC32C:
		return crc32.New(castagnoli)
	case CRC64NVME:
		return crc64nvme.New()
	case SHA1:
		return sha1.New()
	case SHA256:
		return sha256.New()
	}
	panic(fmt.Sprintf("checksum: New on invalid algorithm %q", string(a)))
}

// Size returns the digest length of a in bytes, or 0 if a is not Valid.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return 4
	case CRC64NVME:
		return 8
	case SHA1:
		return sha1.Size
	case SHA256:
		return sha256.Size
	}
	return 0
}

// IsCRC reports whether a is one of the CRC algorithms, the ones that
// support FULL_OBJECT multipart checksums through CombineCRC.
func (a Algorithm) IsCRC() bool {
	return a == CRC32 || a == CRC32C || a == CRC64NVME
}

// String returns the S3 spelling of a.
func (a Algorithm) String() string { return string(a) }
