package e2e_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// crc64NVME is the reflected polynomial of CRC-64/NVME; Go's crc64 uses
// the same init and final inversion, so the table is all it takes.
var crc64NVME = crc64.MakeTable(0x9a6c9329ac4bc9b5)

// newHash returns the hash S3 uses for alg.
func newHash(alg types.ChecksumAlgorithm) hash.Hash {
	switch alg {
	case types.ChecksumAlgorithmCrc32:
		return crc32.NewIEEE()
	case types.ChecksumAlgorithmCrc32c:
		return crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case types.ChecksumAlgorithmCrc64nvme:
		return crc64.New(crc64NVME)
	case types.ChecksumAlgorithmSha1:
		return sha1.New()
	case types.ChecksumAlgorithmSha256:
		return sha256.New()
	}
	panic(fmt.Sprintf("no hash for %q", alg))
}

func rawSum(alg types.ChecksumAlgorithm, data []byte) []byte {
	h := newHash(alg)
	h.Write(data)
	return h.Sum(nil)
}

// sumOf is the x-amz-checksum-* value of data: base64 of the big-endian
// digest.
func sumOf(alg types.ChecksumAlgorithm, data []byte) string {
	return base64.StdEncoding.EncodeToString(rawSum(alg, data))
}

// compositeSum is the checksum of a COMPOSITE multipart object: the
// checksum of the parts' concatenated raw checksums, "-", the part count.
func compositeSum(alg types.ChecksumAlgorithm, parts ...[]byte) string {
	h := newHash(alg)
	for _, p := range parts {
		h.Write(rawSum(alg, p))
	}
	return fmt.Sprintf("%s-%d", base64.StdEncoding.EncodeToString(h.Sum(nil)), len(parts))
}

func TestSumHelpers(t *testing.T) {
	// Check values from the CRC catalogue for "123456789".
	in := []byte("123456789")
	for alg, want := range map[types.ChecksumAlgorithm]uint64{
		types.ChecksumAlgorithmCrc32:     0xcbf43926,
		types.ChecksumAlgorithmCrc32c:    0xe3069283,
		types.ChecksumAlgorithmCrc64nvme: 0xae8b14860a799888,
	} {
		raw := rawSum(alg, in)
		var got uint64
		if len(raw) == 4 {
			got = uint64(binary.BigEndian.Uint32(raw))
		} else {
			got = binary.BigEndian.Uint64(raw)
		}
		if got != want {
			t.Errorf("%s(123456789) = %#x, want %#x", alg, got, want)
		}
	}
}
