package branch_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// listModel is what a branch should hold: key to ETag.
type listModel map[string]string

// importKeys commits puts of keys with ETag etag (and deletes of dels)
// to a branch and records them in m.
func importKeys(t *testing.T, s *branch.Service, repo, br string, m listModel, etag string, puts []string) {
	t.Helper()
	slices.Sort(puts)
	entries := func(yield func(branch.ImportEntry, error) bool) {
		for _, k := range puts {
			if !yield(branch.ImportEntry{Key: k, Entry: &manifest.Entry{Size: 1, ETag: etag}}, nil) {
				return
			}
		}
	}
	if _, err := s.Import(context.Background(), repo, br, iter.Seq2[branch.ImportEntry, error](entries), branch.CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, k := range puts {
		m[k] = etag
	}
}

// stageKeys stages puts (ETag etag) and tombstones on a branch and records
// them in m; a tombstone over a key that is not there is staged too.
func stageKeys(t *testing.T, s *branch.Service, repo, br string, m listModel, etag string, puts, dels []string) {
	t.Helper()
	var entries []branch.ImportEntry
	for _, k := range puts {
		entries = append(entries, branch.ImportEntry{Key: k, Entry: &manifest.Entry{Size: 1, ETag: etag}})
		m[k] = etag
	}
	for _, k := range dels {
		entries = append(entries, branch.ImportEntry{Key: k, Delete: true})
		delete(m, k)
	}
	if err := branch.StageBulk(context.Background(), s, repo, br, entries); err != nil {
		t.Fatal(err)
	}
}

func keyRange(format string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf(format, i))
	}
	return out
}

// everyOther returns every other element of s from index from on.
func everyOther(s []string, from int) []string {
	var out []string
	for i := from; i < len(s); i += 2 {
		out = append(out, s[i])
	}
	return out
}

// refList is the listing a page of o should return, computed from the
// model's keys by brute force.
func refList(m listModel, o branch.ListOptions) (objects, prefixes []string, truncated bool, next string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type item struct {
		s  string
		cp bool
	}
	var items []item
	for _, k := range keys {
		if !strings.HasPrefix(k, o.Prefix) || k <= o.After || !visible(o.Filter, k) {
			continue
		}
		cp := ""
		if o.Delimiter != "" {
			if i := strings.Index(k[len(o.Prefix):], o.Delimiter); i >= 0 {
				cp = k[:len(o.Prefix)+i+len(o.Delimiter)]
			}
		}
		switch {
		case cp == "":
			items = append(items, item{s: k})
		case cp <= o.After:
			// Listed on an earlier page (o.After lies under cp).
		case len(items) == 0 || items[len(items)-1].s != cp:
			items = append(items, item{s: cp, cp: true})
		}
	}
	if len(items) > o.MaxKeys {
		items, truncated = items[:o.MaxKeys], true
	}
	for _, it := range items {
		if it.cp {
			prefixes = append(prefixes, it.s)
		} else {
			objects = append(objects, it.s)
		}
		if truncated {
			next = it.s
		}
	}
	return objects, prefixes, truncated, next
}

func visible(f *branch.Filter, k string) bool {
	if f == nil {
		return true
	}
	for _, r := range f.Ranges {
		if k >= r.Start && (r.End == "" || k < r.End) {
			return f.Match(k)
		}
	}
	return false
}

// checkListings pages through each listing with several page sizes and
// compares every page with refList.
func checkListings(t *testing.T, s *branch.Service, repo, br string, m listModel) {
	t.Helper()
	notThree := &branch.Filter{
		Ranges: []branch.KeyRange{{Start: "a/0100", End: "a/0200"}, {Start: "d/", End: ""}},
		Match:  func(k string) bool { return !strings.HasSuffix(k, "3") },
	}
	for _, c := range []struct {
		name  string
		o     branch.ListOptions
		sizes []int
	}{
		{"root", branch.ListOptions{Delimiter: "/"}, []int{1, 2, 3, 1000}},
		{"flat", branch.ListOptions{}, []int{7, 1000}},
		{"mixed prefix", branch.ListOptions{Prefix: "m/", Delimiter: "/"}, []int{1, 2, 3, 1000}},
		{"nested", branch.ListOptions{Prefix: "x/", Delimiter: "/"}, []int{1, 2, 3, 1000}},
		{"tombstones first", branch.ListOptions{Prefix: "s/"}, []int{3, 1000}},
		{"after inside a prefix", branch.ListOptions{Delimiter: "/", After: "m/0050"}, []int{1, 2, 3, 1000}},
		{"after inside a hidden prefix", branch.ListOptions{Delimiter: "/", After: "d/0001"}, []int{1, 2, 3, 1000}},
		{"after a common prefix", branch.ListOptions{Delimiter: "/", After: "a/"}, []int{1, 2, 3}},
		{"after in a flat prefix", branch.ListOptions{Prefix: "a/", After: "a/0100"}, []int{3, 1000}},
		{"filtered root", branch.ListOptions{Delimiter: "/", Filter: notThree}, []int{1, 2, 3, 1000}},
		{"filtered flat", branch.ListOptions{Filter: notThree}, []int{5, 1000}},
		{"filtered prefix", branch.ListOptions{Prefix: "m/", Delimiter: "/", Filter: notThree}, []int{1, 2, 3, 1000}},
		{"filtered after", branch.ListOptions{Delimiter: "/", After: "a/0150", Filter: notThree}, []int{1, 2, 3}},
	} {
		for _, size := range c.sizes {
			t.Run(fmt.Sprintf("%s/max=%d", c.name, size), func(t *testing.T) {
				o := c.o
				o.MaxKeys = size
				for page := 0; ; page++ {
					res, err := s.List(context.Background(), repo, br, o)
					if err != nil {
						t.Fatal(err)
					}
					objs, cps, trunc, next := refList(m, o)
					var got []string
					for _, obj := range res.Objects {
						got = append(got, obj.Key)
						if obj.Entry.ETag != m[obj.Key] {
							t.Fatalf("page %d after %q: %s has ETag %q, want %q", page, o.After, obj.Key, obj.Entry.ETag, m[obj.Key])
						}
					}
					if !slices.Equal(got, objs) || !slices.Equal(res.CommonPrefixes, cps) ||
						res.Truncated != trunc || res.Next != next {
						t.Fatalf("page %d after %q:\n got %q %q truncated %v next %q\nwant %q %q truncated %v next %q",
							page, o.After, got, res.CommonPrefixes, res.Truncated, res.Next, objs, cps, trunc, next)
					}
					if !res.Truncated {
						break
					}
					o.After = res.Next
				}
			})
		}
	}
}

// listFixture builds a branch whose listings exercise the merge of staged
// and committed keys: long runs crossing the staging pages, prefixes whose
// staged entries are all tombstones, tombstones before the first visible
// key, and committed keys overwritten or deleted in staging.
func listFixture(t *testing.T) (*branch.Service, listModel) {
	t.Helper()
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "lists", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	m := listModel{}
	var committed []string
	committed = append(committed, keyRange("a/%04d", 0, 600)...)
	committed = append(committed, keyRange("d/%04d", 0, 300)...)
	committed = append(committed, everyOther(keyRange("m/%04d", 0, 100), 0)...)
	committed = append(committed, "k1", "k2", "x/y/1", "x/y/2", "x/z", "z/0")
	importKeys(t, s, "lists", "main", m, "c", committed)

	var puts, dels []string
	dels = append(dels, keyRange("d/%04d", 0, 300)...) // every key of d/ deleted
	dels = append(dels, keyRange("e/%04d", 0, 20)...)  // tombstones only, nothing beneath
	puts = append(puts, everyOther(keyRange("m/%04d", 0, 100), 1)...)
	puts = append(puts, "m/0040", "m/0042") // overwrites
	dels = append(dels, "m/0010", "m/0011", "m/0020")
	dels = append(dels, keyRange("s/%04d", 0, 300)...) // 300 tombstones, then keys
	puts = append(puts, keyRange("s/%04d", 300, 1000)...)
	puts = append(puts, "k0", "x/y/0", "x/w", "y/only/staged")
	dels = append(dels, "z/0", "k2")
	stageKeys(t, s, "lists", "main", m, "s", puts, dels)

	// And some through the service itself.
	put(t, s, "lists", "main", "m/extra", "p")
	m["m/extra"] = "p"
	if _, err := s.Delete(ctx, "lists", "main", "a/0005", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	delete(m, "a/0005")
	return s, m
}

func TestListMergesStagingOverTree(t *testing.T) {
	s, m := listFixture(t)
	for _, hidden := range []string{"d/", "e/"} {
		for k := range m {
			if strings.HasPrefix(k, hidden) {
				t.Fatalf("fixture: %s is visible", k)
			}
		}
	}
	checkListings(t, s, "lists", "main", m)
}

// TestListDuringCommit lists while a commit has sealed the staging
// generation and not yet folded it, with more writes staged in the new
// generation over it: three sources overlaid.
func TestListDuringCommit(t *testing.T) {
	ctx := context.Background()
	s, m := listFixture(t)
	paused, resume := make(chan struct{}), make(chan struct{})
	branch.SetFoldHook(s, func() { close(paused); <-resume })
	done := make(chan error, 1)
	go func() {
		_, err := s.Commit(ctx, "lists", "main", branch.CommitOptions{})
		done <- err
	}()
	<-paused
	var puts, dels []string
	puts = append(puts, "d/0150", "e/0005", "m/0010", "s/0100") // back over sealed tombstones
	dels = append(dels, "m/0041", "s/0300", "x/y/0", "y/only/staged")
	dels = append(dels, keyRange("a/%04d", 100, 400)...)
	stageKeys(t, s, "lists", "main", m, "n", puts, dels)
	t.Run("sealed", func(t *testing.T) { checkListings(t, s, "lists", "main", m) })
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Run("committed", func(t *testing.T) { checkListings(t, s, "lists", "main", m) })
}
