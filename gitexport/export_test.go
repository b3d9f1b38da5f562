package gitexport

import (
	"fmt"
	"strings"
)

// EncodeKey and DecodeKey apply the segment escaping to a whole key, as
// the tests check it; the exporter escapes a segment at a time.

// EncodeKey returns the Git path of key; suffix marks an object whose key
// is also a directory.
func EncodeKey(key string, suffix bool) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = EncodeSegment(s, i == 0)
	}
	p := strings.Join(segs, "/")
	if suffix {
		p += fileSuffix
	}
	return p
}

// DecodeKey reverses EncodeKey.
func DecodeKey(path string) (key string, suffix bool, err error) {
	names := strings.Split(path, "/")
	segs := make([]string, len(names))
	for i, n := range names {
		s, suf, err := DecodeSegment(n, i == 0)
		if err != nil {
			return "", false, err
		}
		if suf && i < len(names)-1 {
			return "", false, fmt.Errorf("%q: suffix on a directory: %w", path, ErrPath)
		}
		segs[i], suffix = s, suf
	}
	return strings.Join(segs, "/"), suffix, nil
}
