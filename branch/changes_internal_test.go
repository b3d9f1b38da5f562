package branch

import (
	"fmt"
	"testing"
)

// TestJournalFallsBehind: a cursor the ring has overwritten, or one of
// another journal, is answered All; one within it names every key once,
// with its latest version.
func TestJournalFallsBehind(t *testing.T) {
	j := newJournal()
	start := journalCursor{epoch: j.epoch, repo: 1, branchID: 2}
	j.add([]change{{repo: 1, branchID: 2, key: "a", vid: "v1"}, {repo: 1, branchID: 3, key: "other"},
		{repo: 9, branchID: 2, key: "elsewhere"}, {repo: 1, branchID: 2, key: "a", vid: "v2", del: true}})
	keys, last, ok := j.since(start, 1, 2, "main")
	if !ok || last != 4 || fmt.Sprint(keys) != "[{a v2 true}]" {
		t.Fatalf("since the start: %v %d %v", keys, last, ok)
	}
	if _, _, ok := j.since(journalCursor{epoch: "another", repo: 1, branchID: 2}, 1, 2, "main"); ok {
		t.Fatal("a cursor of another journal was followed")
	}
	if _, _, ok := j.since(journalCursor{epoch: j.epoch, repo: 1, branchID: 2, seq: 99}, 1, 2, "main"); ok {
		t.Fatal("a cursor ahead of the journal was followed")
	}
	for i := range journalSize {
		j.add([]change{{repo: 1, branchID: 2, key: fmt.Sprint("k", i%10)}})
	}
	if _, _, ok := j.since(start, 1, 2, "main"); ok {
		t.Fatal("a cursor the ring overwrote was followed")
	}
	cur := journalCursor{epoch: j.epoch, repo: 1, branchID: 2, seq: j.next - 1}
	j.add([]change{{repo: 1, name: "main", all: true}})
	if _, _, ok := j.since(cur, 1, 2, "main"); ok {
		t.Fatal("a moved head was not All")
	}
	if _, _, ok := j.since(cur, 1, 2, "other"); !ok {
		t.Fatal("another branch's head moving made this one All")
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := journalCursor{epoch: "0123456789abcdef", repo: 7, branchID: 1 << 40, seq: 12345}
	got, ok := parseCursor(c.String())
	if !ok || got != c {
		t.Fatalf("%q parsed as %+v %v", c.String(), got, ok)
	}
	for _, bad := range []string{"", "x", c.String()[:20], c.String() + "0", "0123456789abcdef.zz" + c.String()[19:]} {
		if _, ok := parseCursor(bad); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func FuzzParseCursor(f *testing.F) {
	f.Add(journalCursor{epoch: "0123456789abcdef", repo: 1, branchID: 2, seq: 3}.String())
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := parseCursor(s)
		if ok && c.String() != s && len(s) == len(c.String()) {
			// Hex is case-insensitive on the way in; the round trip of
			// what it gives must be stable.
			if again, _ := parseCursor(c.String()); again != c {
				t.Fatalf("%q: %+v then %+v", s, c, again)
			}
		}
	})
}
