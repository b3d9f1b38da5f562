package branch

import (
	"fmt"
	"strings"
	"testing"
)

// TestJournalFallsBehind: a cursor the ring has overwritten, one ahead of
// it or of another branch is answered All; one within it names every key
// once, with its latest version.
func TestJournalFallsBehind(t *testing.T) {
	j := newJournal()
	start := journalCursor{repo: 1, branchID: 2}
	j.add([]change{{repo: 1, branchID: 2, key: "a", vid: "v1"}, {repo: 1, branchID: 3, key: "other"},
		{repo: 9, branchID: 2, key: "elsewhere"}, {repo: 1, branchID: 2, key: "a", vid: "v2", del: true}})
	keys, last, ok := j.since(start, 1, 2, "main")
	if !ok || last != 4 || fmt.Sprint(keys) != "[{a v2 true}]" {
		t.Fatalf("since the start: %v %d %v", keys, last, ok)
	}
	if _, _, ok := j.since(journalCursor{repo: 1, branchID: 3}, 1, 2, "main"); ok {
		t.Fatal("a cursor of another branch was followed")
	}
	if _, _, ok := j.since(journalCursor{repo: 1, branchID: 2, seq: 99}, 1, 2, "main"); ok {
		t.Fatal("a cursor ahead of the journal was followed")
	}
	for i := range journalSize {
		j.add([]change{{repo: 1, branchID: 2, key: fmt.Sprint("k", i%10)}})
	}
	if _, _, ok := j.since(start, 1, 2, "main"); ok {
		t.Fatal("a cursor the ring overwrote was followed")
	}
	cur := journalCursor{repo: 1, branchID: 2, seq: j.next - 1}
	j.add([]change{{repo: 1, name: "main", all: true}})
	if _, _, ok := j.since(cur, 1, 2, "main"); ok {
		t.Fatal("a moved head was not All")
	}
	if _, _, ok := j.since(cur, 1, 2, "other"); !ok {
		t.Fatal("another branch's head moving made this one All")
	}
}

// TestJournalBoundsAnAnswer: more key bytes than one answer carries make
// it All.
func TestJournalBoundsAnAnswer(t *testing.T) {
	j := newJournal()
	long := strings.Repeat("x", 1000)
	for i := range 1100 {
		j.add([]change{{repo: 1, branchID: 2, key: fmt.Sprint(long, i)}})
	}
	if keys, _, ok := j.since(journalCursor{repo: 1, branchID: 2}, 1, 2, "main"); ok {
		t.Fatalf("%d keys of 1 KB named in one answer", len(keys))
	}
}

// TestCursorSealed: a cursor opens in the journal that sealed it, says
// nothing readable, and is refused when changed, cut or of another
// journal.
func TestCursorSealed(t *testing.T) {
	j, other := newJournal(), newJournal()
	c := journalCursor{repo: 7, branchID: 1 << 40, seq: 12345}
	s := j.seal(c)
	if got, ok := j.open(s); !ok || got != c {
		t.Fatalf("%q opened as %+v %v", s, got, ok)
	}
	if s == j.seal(c) {
		t.Fatal("the same position sealed twice gives the same cursor: it tells when nothing changed")
	}
	flipped := []byte(s)
	flipped[len(flipped)-1] ^= 1
	if flipped[len(flipped)-1] > 'f' || flipped[len(flipped)-1] < '0' {
		flipped[len(flipped)-1] = '0'
	}
	for _, bad := range []string{"", "x", s[:20], s + "00", string(flipped)} {
		if _, ok := j.open(bad); ok && bad != s {
			t.Fatalf("%q opened", bad)
		}
	}
	if _, ok := other.open(s); ok {
		t.Fatal("another journal opened the cursor")
	}
}

func FuzzOpenCursor(f *testing.F) {
	j := newJournal()
	f.Add(j.seal(journalCursor{repo: 1, branchID: 2, seq: 3}))
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		if c, ok := j.open(s); ok {
			if again, ok := j.open(j.seal(c)); !ok || again != c {
				t.Fatalf("%q: %+v then %+v", s, c, again)
			}
		}
	})
}
