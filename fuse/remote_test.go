package fuse

import (
	"syscall"
	"testing"
	"time"
)

func TestMetadata(t *testing.T) {
	mt := time.Date(2020, 5, 17, 10, 30, 0, 123456789, time.UTC)
	if got, ok := parseMtime(formatMtime(mt)); !ok || !got.Equal(mt) {
		t.Fatalf("mtime round trip: %v %v", got, ok)
	}
	for v, want := range map[string]time.Time{
		"1589711400":       time.Unix(1589711400, 0),         // s3fs: whole seconds
		"1589711400.5":     time.Unix(1589711400, 500000000), // rclone: a fraction
		"1589711400.12345": time.Unix(1589711400, 123450000),
	} {
		if got, ok := parseMtime(v); !ok || !got.Equal(want) {
			t.Errorf("parseMtime(%q) = %v %v", v, got, ok)
		}
	}
	for _, bad := range []string{"", "x", "1.x", "-"} {
		if _, ok := parseMtime(bad); ok {
			t.Errorf("parseMtime(%q) accepted", bad)
		}
	}
	e := &entry{Meta: map[string]string{metaMode: "420"}} // 0644, no type
	if m := e.mode(syscall.S_IFREG); m != syscall.S_IFREG|0o644 {
		t.Fatalf("mode %o", m)
	}
	e.Meta[metaMode] = "41471" // S_IFLNK|0777
	if m := e.mode(syscall.S_IFREG); m&syscall.S_IFMT != syscall.S_IFLNK {
		t.Fatalf("symlink mode %o", m)
	}
	e.Meta[metaMode] = "garbage"
	if m := e.mode(syscall.S_IFREG | 0o644); m != syscall.S_IFREG|0o644 {
		t.Fatalf("a bad mode falls back: %o", m)
	}
}

// FuzzMetadata: metadata any S3 client may have set never panics the
// mount, and what the mount writes reads back.
func FuzzMetadata(f *testing.F) {
	f.Add("1589711400.123456789", "33188")
	f.Add("-1.-1", "99999999999999999999")
	f.Add("1e9", "0x1ff")
	f.Fuzz(func(t *testing.T, mtime, mode string) {
		e := &entry{Meta: map[string]string{metaMtime: mtime, metaMode: mode}}
		_ = e.mode(syscall.S_IFREG)
		if ts, ok := parseMtime(mtime); ok {
			if back, ok := parseMtime(formatMtime(ts)); !ok || !back.Equal(ts) {
				t.Fatalf("%q -> %v -> %q -> %v", mtime, ts, formatMtime(ts), back)
			}
		}
	})
}
