package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the suffixes Parse understands, longest first.
var units = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// Parse reads a byte count: a plain number, or one with a suffix such
// as KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T mean the same) or KB,
// MB, GB, TB (powers of 1000).
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("size %q: want a byte count such as 500MiB or 10GB", s)
	}
	v := f * float64(mult)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), nil
}

// Flag is a byte-count command-line flag (a pflag.Value); V is its value.
type Flag struct{ V int64 }

// String returns the value in bytes.
func (f *Flag) String() string { return strconv.FormatInt(f.V, 10) }

// Set parses s with Parse.
func (f *Flag) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	f.V = v
	return nil
}

// Type names the flag's kind in help texts.
func (f *Flag) Type() string { return "size" }
