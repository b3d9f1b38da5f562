package auth

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"testing"
)

// FuzzTotal: the sum of ranges is exact or refused; it never wraps, and a
// negative or overflowing range is always refused.
func FuzzTotal(f *testing.F) {
	enc := func(vs ...int64) []byte {
		b := make([]byte, 0, 8*len(vs))
		for _, v := range vs {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
		return b
	}
	f.Add(enc(0, 10, 5, 5))
	f.Add(enc(0, math.MaxInt64, 0, 1))
	f.Add(enc(math.MaxInt64-1, 2))
	f.Add(enc(0, -5))
	f.Fuzz(func(t *testing.T, b []byte) {
		var rs []Range
		for len(b) >= 16 {
			rs = append(rs, Range{Off: int64(binary.BigEndian.Uint64(b)), Len: int64(binary.BigEndian.Uint64(b[8:]))})
			b = b[16:]
		}
		got, err := total(rs)
		sum, ok := new(big.Int), true
		for _, r := range rs {
			end := new(big.Int).Add(big.NewInt(r.Off), big.NewInt(r.Len))
			if r.Off < 0 || r.Len < 0 || !end.IsInt64() {
				ok = false
			}
			sum.Add(sum, big.NewInt(r.Len))
		}
		ok = ok && sum.IsInt64()
		if !ok {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("total(%v) = %d, %v; want ErrInvalid", rs, got, err)
			}
			return
		}
		if err != nil || got != sum.Int64() {
			t.Fatalf("total(%v) = %d, %v; want %s", rs, got, err, sum)
		}
	})
}
