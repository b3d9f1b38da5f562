package gate

import (
	"slices"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// digestInput is everything an approval is bound to.
type digestInput struct {
	repo, source, target, lease string
	changes                     []ChangeLine
}

func (in digestInput) sum() string {
	return digest(in.repo, in.source, in.target, in.lease, in.changes)
}

func baseInput() digestInput {
	return digestInput{repo: "r", source: "c-source", target: "c-target", lease: "lse_1", changes: []ChangeLine{
		{Kind: "A", Key: "docs/new.md", NewETag: "e-new", NewSize: 3},
		{Kind: "M", Key: "docs/a.md", OldETag: "e-a1", NewETag: "e-a2", NewSize: 4},
		{Kind: "D", Key: "docs/old.md", OldETag: "e-old"},
	}}
}

// TestDigestGolden pins the v1 encoding: a stored card's digest must stay
// the digest of its diff across releases, or every waiting approval would
// turn void on upgrade. The value was computed apart from this package:
// SHA-256 over each field as an 8-byte big-endian length and its bytes,
// the tag "agentnas merge digest v1", repo, source, target, lease, then
// kind, key, old etag, new etag of each change.
func TestDigestGolden(t *testing.T) {
	const want = "44fd6c4400965fd524995eb35d25d902e9f03fd4f0eaf2eab8db95921f91259f"
	if got := baseInput().sum(); got != want {
		t.Fatalf("digest = %s, want %s (the v1 encoding changed)", got, want)
	}
}

func TestDigestDeterministic(t *testing.T) {
	a, b := baseInput(), baseInput()
	if a.sum() != b.sum() {
		t.Fatal("the same diff and heads gave two digests")
	}
	// What the card shows but the digest does not bind (an etag names the
	// content, so the size adds nothing) may differ.
	b.changes[0].NewSize = 999
	if a.sum() != b.sum() {
		t.Fatal("the digest depends on the size, which the etag already binds")
	}
	if d := (digestInput{}).sum(); len(d) != 64 {
		t.Fatalf("digest of nothing: %q", d)
	}
}

// TestDigestSensitive: changing anything an approval is bound to changes
// the digest, and no two of these diffs share one.
func TestDigestSensitive(t *testing.T) {
	mut := func(f func(*digestInput)) digestInput {
		in := baseInput()
		f(&in)
		return in
	}
	cases := map[string]digestInput{
		"base":              baseInput(),
		"repo":              mut(func(in *digestInput) { in.repo = "r2" }),
		"source head":       mut(func(in *digestInput) { in.source = "c-source2" }),
		"target head":       mut(func(in *digestInput) { in.target = "c-target2" }),
		"heads swapped":     mut(func(in *digestInput) { in.source, in.target = in.target, in.source }),
		"lease":             mut(func(in *digestInput) { in.lease = "lse_2" }),
		"no lease (owner)":  mut(func(in *digestInput) { in.lease = "" }),
		"kind":              mut(func(in *digestInput) { in.changes[1].Kind = "A" }),
		"key":               mut(func(in *digestInput) { in.changes[1].Key = "docs/b.md" }),
		"old etag":          mut(func(in *digestInput) { in.changes[1].OldETag = "e-a0" }),
		"new etag":          mut(func(in *digestInput) { in.changes[1].NewETag = "e-a3" }),
		"delete's old etag": mut(func(in *digestInput) { in.changes[2].OldETag = "" }),
		"one change fewer":  mut(func(in *digestInput) { in.changes = in.changes[:2] }),
		"no changes":        mut(func(in *digestInput) { in.changes = nil }),
		"one change more": mut(func(in *digestInput) {
			in.changes = append(in.changes, ChangeLine{Kind: "A", Key: "x", NewETag: "e"})
		}),
		"an empty change more": mut(func(in *digestInput) { in.changes = append(in.changes, ChangeLine{}) }),
		"changes reordered":    mut(func(in *digestInput) { slices.Reverse(in.changes) }),
	}
	seen := map[string]string{}
	for name, in := range cases {
		d := in.sum()
		if other, ok := seen[d]; ok {
			t.Errorf("%q and %q have the same digest %s", name, other, d[:12])
		}
		seen[d] = name
	}
}

// TestDigestUnambiguous: moving bytes from one field to the next, which a
// plain concatenation (or one with a separator that keys may contain)
// could not tell apart, changes the digest.
func TestDigestUnambiguous(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b digestInput
	}{
		{"repo and source",
			digestInput{repo: "r/x", source: "s"},
			digestInput{repo: "r", source: "/xs"}},
		{"lease and the first kind",
			digestInput{lease: "lseA", changes: []ChangeLine{{Kind: "", Key: "k"}}},
			digestInput{lease: "lse", changes: []ChangeLine{{Kind: "A", Key: "k"}}}},
		{"key and etag, with a NUL in the key",
			digestInput{changes: []ChangeLine{{Kind: "M", Key: "a\x00b", OldETag: "c"}}},
			digestInput{changes: []ChangeLine{{Kind: "M", Key: "a", OldETag: "b\x00c"}}}},
		{"key and etag, with a newline in the key",
			digestInput{changes: []ChangeLine{{Kind: "M", Key: "a\nb", NewETag: "c"}}},
			digestInput{changes: []ChangeLine{{Kind: "M", Key: "a", NewETag: "b\nc"}}}},
		{"one change or two",
			digestInput{changes: []ChangeLine{{Kind: "A", Key: "k", NewETag: "AK2"}}},
			digestInput{changes: []ChangeLine{{Kind: "A", Key: "k"}, {Kind: "A", Key: "K2"}}}},
		{"a key that looks like a length prefix",
			digestInput{changes: []ChangeLine{{Kind: "A", Key: "\x00\x00\x00\x00\x00\x00\x00\x01x"}}},
			digestInput{changes: []ChangeLine{{Kind: "A", Key: ""}, {Kind: "x"}}}},
		{"old etag and new etag",
			digestInput{changes: []ChangeLine{{Kind: "M", Key: "k", OldETag: "e"}}},
			digestInput{changes: []ChangeLine{{Kind: "M", Key: "k", NewETag: "e"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.a.sum() == tc.b.sum() {
				t.Fatalf("%+v and %+v have the same digest", tc.a, tc.b)
			}
		})
	}
}

func TestLines(t *testing.T) {
	in := []branch.Change{
		{Kind: branch.Added, Key: "a", New: &manifest.Entry{ETag: "e1", Size: 5}},
		{Kind: branch.Modified, Key: "b", Old: &manifest.Entry{ETag: "e2"}, New: &manifest.Entry{ETag: "e3", Size: 7}},
		{Kind: branch.Deleted, Key: "c", Old: &manifest.Entry{ETag: "e4", Size: 9}},
	}
	got, counts, deletes := lines(in)
	want := []ChangeLine{
		{Kind: "A", Key: "a", NewETag: "e1", NewSize: 5},
		{Kind: "M", Key: "b", OldETag: "e2", NewETag: "e3", NewSize: 7},
		{Kind: "D", Key: "c", OldETag: "e4"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lines = %+v, want %+v", got, want)
	}
	if counts["added"] != 1 || counts["modified"] != 1 || counts["deleted"] != 1 || !deletes {
		t.Fatalf("counts %v, deletes %v", counts, deletes)
	}
	if got, counts, deletes := lines(in[:2]); len(got) != 2 || counts["deleted"] != 0 || deletes {
		t.Fatalf("without a delete: %v %v", counts, deletes)
	}
	if got, _, _ := lines(nil); got == nil {
		t.Fatal("lines(nil) is nil: a card's changes must encode as [] not null")
	}
}
