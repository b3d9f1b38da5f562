package api

import (
	"math"
	"math/big"
	"testing"
)

// FuzzCheckRange: a range checkRange accepts lies inside the object, for
// any numbers, without overflow.
func FuzzCheckRange(f *testing.F) {
	f.Add(int64(0), int64(10), int64(10))
	f.Add(int64(math.MaxInt64-5), int64(10), int64(100))
	f.Add(int64(-1), int64(1), int64(100))
	f.Add(int64(5), int64(math.MaxInt64), int64(100))
	f.Fuzz(func(t *testing.T, off, n, size int64) {
		if size < 0 {
			return
		}
		err := checkRange("r", off, n, size)
		end := new(big.Int).Add(big.NewInt(off), big.NewInt(n))
		inside := off >= 0 && n >= 0 && end.Cmp(big.NewInt(size)) <= 0
		if (err == nil) != inside {
			t.Fatalf("checkRange(%d, %d, %d) = %v, inside = %v", off, n, size, err, inside)
		}
	})
}
