package checksum

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
)

// Part is one part of a multipart object as CombineCRC needs it.
type Part struct {
	// Sum is the raw big-endian CRC of the part (the decoded x-amz-checksum
	// value).
	Sum []byte
	// Size is the part's length in bytes.
	Size int64
}

// Composite returns the COMPOSITE checksum of a multipart object whose parts
// have the raw digests parts, in part order: the base64 of a over their
// concatenation, followed by "-" and the number of parts. a must be Valid.
func Composite(a Algorithm, parts [][]byte) string {
	h := a.New()
	for _, p := range parts {
		h.Write(p)
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(parts))
}

// CombineCRC returns the FULL_OBJECT checksum (base64) of the concatenation
// of parts, computed from each part's CRC and size alone. The cost is
// O(log size) per part; the data is never read again.
//
// It returns an error wrapping ErrInvalidAlgorithm when a is not a CRC, and
// ErrInvalidChecksum when a part's Sum has the wrong size or its Size is
// negative.
func CombineCRC(a Algorithm, parts []Part) (string, error) {
	g := gfFor(a)
	if g == nil {
		return "", fmt.Errorf("%w: %s cannot be combined", ErrInvalidAlgorithm, a)
	}
	var crc uint64
	for i, p := range parts {
		if len(p.Sum) != a.Size() || p.Size < 0 {
			return "", fmt.Errorf("%w: part %d of %s: %d-byte sum, size %d", ErrInvalidChecksum, i+1, a, len(p.Sum), p.Size)
		}
		var c uint64
		if g.width == 32 {
			c = uint64(binary.BigEndian.Uint32(p.Sum))
		} else {
			c = binary.BigEndian.Uint64(p.Sum)
		}
		if i == 0 {
			crc = c
			continue
		}
		crc = g.combine(crc, c, p.Size)
	}
	out := make([]byte, a.Size())
	if g.width == 32 {
		binary.BigEndian.PutUint32(out, uint32(crc))
	} else {
		binary.BigEndian.PutUint64(out, crc)
	}
	return base64.StdEncoding.EncodeToString(out), nil
}

// gf is arithmetic modulo a reflected CRC polynomial: bit width-1 stands
// for x^0 and bit 0 for x^(width-1), the representation CRC registers use.
// All three S3 CRCs are reflected with an all-ones initial value and final
// xor, so crc(A||B) = crc(A)·x^(8·len(B)) mod P xor crc(B): the initial and
// final xors cancel, as in zlib's crc32_combine.
type gf struct {
	width int
	poly  uint64     // reflected polynomial without its x^width term
	x2n   [67]uint64 // x2n[k] = x^(2^k) mod P; k reaches 3+63 for int64 sizes
}

var (
	gfOnce                     sync.Once
	gfCRC32, gfCRC32C, gfCRC64 *gf
)

// gfFor returns the field of a CRC algorithm, or nil for other algorithms.
func gfFor(a Algorithm) *gf {
	gfOnce.Do(func() {
		gfCRC32 = newGF(32, 0xEDB88320)
		gfCRC32C = newGF(32, 0x82F63B78)
		gfCRC64 = newGF(64, 0x9A6C9329AC4BC9B5)
	})
	switch a {
	case CRC32:
		return gfCRC32
	case CRC32C:
		return gfCRC32C
	case CRC64NVME:
		return gfCRC64
	}
	return nil
}

func newGF(width int, poly uint64) *gf {
	g := &gf{width: width, poly: poly}
	g.x2n[0] = g.one() >> 1 // x^1
	for k := 1; k < len(g.x2n); k++ {
		g.x2n[k] = g.mul(g.x2n[k-1], g.x2n[k-1])
	}
	return g
}

// one returns the polynomial 1 (x^0).
func (g *gf) one() uint64 { return 1 << (g.width - 1) }

// mul returns a·b mod P.
func (g *gf) mul(a, b uint64) uint64 {
	var p uint64
	for m := g.one(); m != 0 && a != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			a &^= m
		}
		if b&1 != 0 {
			b = b>>1 ^ g.poly
		} else {
			b >>= 1
		}
	}
	return p
}

// xpow8n returns x^(8·n) mod P by square-and-multiply over x2n.
func (g *gf) xpow8n(n int64) uint64 {
	p := g.one()
	for k := 3; n != 0; k++ {
		if n&1 != 0 {
			p = g.mul(g.x2n[k], p)
		}
		n >>= 1
	}
	return p
}

// combine returns the CRC of A||B from crc1 = crc(A), crc2 = crc(B) and
// len2 = len(B).
func (g *gf) combine(crc1, crc2 uint64, len2 int64) uint64 {
	return g.mul(g.xpow8n(len2), crc1) ^ crc2
}
