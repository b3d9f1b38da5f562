// Package sourcetest is the conformance suite that every source.Source
// implementation runs from its own tests:
//
//	func TestConformance(t *testing.T) {
//		sourcetest.TestSource(t, func(t *testing.T, objs map[string][]byte) sourcetest.Fixture { ... })
//	}
//
// A Fixture is a source holding exactly the given objects, and a way to
// change one behind the source's back (to check drift).
package sourcetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/agentnas/nas/source"
)

// Fixture is one source under test.
type Fixture struct {
	Source source.Source
	// Replace changes the bytes of key in the source (a new version).
	Replace func(t *testing.T, key string, data []byte)
	// Overwrites: a Replace leaves the pinned version unreadable although
	// pins carry version IDs (an adapter's version tokens name the bytes
	// that are there now, not a version kept for later).
	Overwrites bool
}

// Objects are the contents every fixture is made with: nested keys whose
// byte order differs from a naive directory walk ("a-b" < "a/x").
var Objects = map[string][]byte{
	"a-b":         []byte("dash"),
	"a/x":         []byte("nested"),
	"a/y/z.bin":   bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 30000),
	"b":           []byte("bee"),
	"empty":       {},
	"sp ace/é.md": []byte("unicode"),
}

// TestSource runs the suite against fixtures made by newFixture, one per
// subtest.
func TestSource(t *testing.T, newFixture func(t *testing.T, objs map[string][]byte) Fixture) {
	ctx := context.Background()
	keys := make([]string, 0, len(Objects))
	for k := range Objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	list := func(t *testing.T, s source.Source, after string) []source.Object {
		t.Helper()
		var out []source.Object
		if err := s.List(ctx, after, func(o source.Object) error { out = append(out, o); return nil }); err != nil {
			t.Fatalf("List(%q): %v", after, err)
		}
		return out
	}
	read := func(s source.Source, p source.Pin, off, n int64) ([]byte, error) {
		rc, err := s.ReadRange(ctx, p, off, n)
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}

	t.Run("ListInKeyOrder", func(t *testing.T) {
		f := newFixture(t, Objects)
		objs := list(t, f.Source, "")
		var got []string
		for _, o := range objs {
			got = append(got, o.Key)
			if o.Size != int64(len(Objects[o.Key])) || o.ETag == "" {
				t.Errorf("%s: size %d, ETag %q", o.Key, o.Size, o.ETag)
			}
		}
		if !slices.Equal(got, keys) {
			t.Fatalf("listed %q, want %q", got, keys)
		}
		for i, after := range []string{"a-b", "a/", "a/x", "b", "zzz"} {
			var want []string
			for _, k := range keys {
				if k > after {
					want = append(want, k)
				}
			}
			got = got[:0]
			for _, o := range list(t, f.Source, after) {
				got = append(got, o.Key)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d: after %q: %q, want %q", i, after, got, want)
			}
		}
		stop := errors.New("stop")
		n := 0
		if err := f.Source.List(ctx, "", func(source.Object) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
			t.Fatalf("List ended by its callback: %v after %d", err, n)
		}
	})

	t.Run("StatAndReadRanges", func(t *testing.T) {
		f := newFixture(t, Objects)
		for _, k := range keys {
			o, err := f.Source.Stat(ctx, k)
			if err != nil {
				t.Fatalf("Stat(%q): %v", k, err)
			}
			data := Objects[k]
			got, err := read(f.Source, o.Pin(), 0, o.Size)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("whole %s: %d bytes, %v", k, len(got), err)
			}
			if len(data) > 10 {
				got, err := read(f.Source, o.Pin(), 3, int64(len(data))-5)
				if err != nil || !bytes.Equal(got, data[3:len(data)-2]) {
					t.Fatalf("range of %s: %d bytes, %v", k, len(got), err)
				}
			}
			if _, err := f.Source.ReadRange(ctx, o.Pin(), 0, o.Size+1); !errors.Is(err, source.ErrInvalid) {
				t.Fatalf("range past the end of %s: %v", k, err)
			}
		}
		if _, err := f.Source.Stat(ctx, "missing"); !errors.Is(err, source.ErrChanged) {
			t.Fatalf("Stat of a missing key: %v", err)
		}
	})

	t.Run("ReadsOnlyThePinnedVersion", func(t *testing.T) {
		f := newFixture(t, Objects)
		o, err := f.Source.Stat(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		f.Replace(t, "b", []byte("bee, rewritten"))
		now, err := f.Source.Stat(ctx, "b")
		if err != nil || now.ETag == o.ETag {
			t.Fatalf("Stat after a change: %+v, %v (pinned %q)", now, err, o.ETag)
		}
		got, err := read(f.Source, o.Pin(), 0, o.Size)
		if o.VersionID != "" && !f.Overwrites {
			if err != nil || string(got) != "bee" {
				t.Fatalf("versioned source: pinned read %q, %v", got, err)
			}
			return
		}
		if !errors.Is(err, source.ErrChanged) {
			t.Fatalf("read of a changed object: %q, %v; want ErrChanged", got, err)
		}
		gone := source.Pin{Key: "not-there", Size: 3, ETag: o.ETag}
		if _, err := read(f.Source, gone, 0, 3); !errors.Is(err, source.ErrChanged) {
			t.Fatalf("read of a missing object: %v", err)
		}
	})
}
