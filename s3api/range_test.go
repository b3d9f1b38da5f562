package s3api

import (
	"math"
	"testing"
)

// FuzzParseRange: a Range header that parses names a non-empty range
// inside the object; one that does not is ignored or refused, never
// wrapped around.
func FuzzParseRange(f *testing.F) {
	for _, v := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=9223372036854775806-9223372036854775807", "bytes=-9223372036854775807", "bytes=3-1", "bytes=0-0,2-3"} {
		f.Add(v, int64(100))
	}
	f.Add("bytes=0-", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, v string, size int64) {
		if size < 0 || size > maxObjectSize {
			return
		}
		r, ok, err := parseRange(v, size)
		if !ok {
			return
		}
		if err != nil || r.start < 0 || r.length < 1 || r.start >= size || r.length > size-r.start {
			t.Fatalf("parseRange(%q, %d) = %+v, %v", v, size, r, err)
		}
	})
}
