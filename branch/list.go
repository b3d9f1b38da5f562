package branch

import (
	"context"
	"strings"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// ListOptions selects a page of a listing.
type ListOptions struct {
	Prefix    string
	Delimiter string
	// After lists only keys (and common prefixes) greater than it.
	After   string
	MaxKeys int
	// Filter, when set, hides every key it does not match.
	Filter *Filter
	// At, when set, lists the branch as of that commit of its history:
	// the commit's tree, without staging (a read-only mount of a commit).
	At manifest.CommitID
}

// Filter restricts a listing to the keys a principal can see: only the
// Ranges are scanned (so hidden data outside them costs nothing), and only
// keys Match accepts are listed or make a common prefix appear.
type Filter struct {
	Ranges []KeyRange // sorted, disjoint; End "" is unbounded
	Match  func(key string) bool
	// Entry, when set, must also admit each listed key's entry; a key it
	// refuses is left out and makes no common prefix appear.
	Entry func(key string, e *manifest.Entry) bool
}

// KeyRange is the half-open key interval [Start, End); End "" is unbounded.
type KeyRange struct{ Start, End string }

// ranges returns the filter's ranges clipped to [from, to) ("" to: no
// bound), or the whole of [from, to) without a filter.
func (f *Filter) ranges(from, to string) []KeyRange {
	if f == nil {
		return []KeyRange{{Start: from, End: to}}
	}
	var out []KeyRange
	for _, r := range f.Ranges {
		start, end := max(r.Start, from), r.End
		if to != "" && (end == "" || end > to) {
			end = to
		}
		if end != "" && start >= end {
			continue
		}
		out = append(out, KeyRange{start, end})
	}
	return out
}

func (f *Filter) match(key string) bool { return f == nil || f.Match(key) }

// admitsChange asks the filter's Entry about both sides of a change: a
// change is left out when either side is refused.
func (f *Filter) admitsChange(ch Change) bool {
	if f == nil || f.Entry == nil {
		return true
	}
	return (ch.Old == nil || f.Entry(ch.Key, ch.Old)) && (ch.New == nil || f.Entry(ch.Key, ch.New))
}

// admits asks the filter's Entry about the encoded entry val of key, and
// returns the entry it decoded for that (nil without an Entry); an entry
// that does not decode is left to the listing, which reports it.
func (f *Filter) admits(key string, val []byte) (*manifest.Entry, bool) {
	if f == nil || f.Entry == nil {
		return nil, true
	}
	e, err := manifest.DecodeEntry(val)
	if err != nil {
		return nil, true
	}
	return e, f.Entry(key, e)
}

// Object is one listed object.
type Object struct {
	Key   string
	Entry *manifest.Entry
}

// ListResult is one page of a listing, in key order.
type ListResult struct {
	Objects        []Object
	CommonPrefixes []string
	// Truncated says more results follow; Next is the last key or common
	// prefix returned, to pass as After for the next page.
	Truncated bool
	Next      string
	// Damaged are keys whose entries did not decode; the listing skips
	// them rather than failing (fsck reports them).
	Damaged []string
}

// List lists a branch's current objects (staging over the head tree).
//
// The whole page is read in one kv snapshot, the one the branch record
// comes from: every seek past a common prefix rescans the staging area
// from there, which in a snapshot of its own would cost a read
// transaction each, and a concurrent commit cannot fold staged keys away
// between the pages read.
func (s *Service) List(ctx context.Context, repo, branch string, o ListOptions) (*ListResult, error) {
	var res *ListResult
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := s.openView(ctx, r, repo, branch)
		if err != nil {
			return err
		}
		if v, err = s.viewAt(ctx, r, v, o.At); err != nil {
			return err
		}
		res, err = list(s.newMerged(ctx, pinned{r}, v), o)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, k := range res.Damaged {
		s.log.Error("listing skips an entry that does not decode", "repo", repo, "branch", branch, "key", k)
	}
	return res, nil
}

// list reads one page of a listing from m.
func list(m *merged, o ListOptions) (*ListResult, error) {
	res := &ListResult{}
	start := o.Prefix
	if o.After != "" && o.After+"\x00" > start {
		start = o.After + "\x00"
	}
	end, _ := prefixEnd(o.Prefix)
	count := 0
	pos := start // everything below pos has been listed or skipped
	for _, rg := range o.Filter.ranges(start, end) {
		m.seek(max(rg.Start, pos))
		for {
			key, val, ok := m.peek()
			if !ok || rg.End != "" && key >= rg.End || !strings.HasPrefix(key, o.Prefix) {
				break
			}
			if !o.Filter.match(key) {
				m.next()
				continue
			}
			e, ok := o.Filter.admits(key, val)
			if !ok {
				m.next()
				continue
			}
			cp := ""
			if o.Delimiter != "" {
				if i := strings.Index(key[len(o.Prefix):], o.Delimiter); i >= 0 {
					cp = key[:len(o.Prefix)+i+len(o.Delimiter)]
				}
			}
			if cp != "" && o.After != "" && cp <= o.After && strings.HasPrefix(o.After, cp) {
				// Listed on an earlier page.
				next, more := prefixEnd(cp)
				if !more {
					res.Next = ""
					return res, m.err()
				}
				pos = next
				m.seek(next)
				continue
			}
			if count >= o.MaxKeys {
				res.Truncated = true
				return res, m.err()
			}
			count++
			if cp != "" {
				res.CommonPrefixes = append(res.CommonPrefixes, cp)
				res.Next = cp
				next, more := prefixEnd(cp)
				if !more {
					res.Next = ""
					return res, m.err()
				}
				pos = next
				m.seek(next)
				continue
			}
			var err error
			if e == nil {
				e, err = manifest.DecodeEntry(val)
			}
			if err != nil {
				// One damaged entry does not take the listing down with it;
				// fsck reports it, and a GET of it answers the error.
				res.Damaged = append(res.Damaged, key)
				res.Next = key
				m.next()
				continue
			}
			res.Objects = append(res.Objects, Object{Key: key, Entry: e})
			res.Next = key
			m.next()
		}
		if err := m.err(); err != nil {
			return nil, err
		}
	}
	res.Next = ""
	return res, m.err()
}

// prefixEnd returns the smallest string greater than every string with
// prefix p, and false if there is none.
func prefixEnd(p string) (string, bool) {
	e := kv.PrefixEnd([]byte(p))
	return string(e), e != nil
}

// source is an ordered stream of staged values or tree entries.
type source interface {
	seek(key string)
	// peek returns the current item; del marks a tombstone.
	peek() (key string, val []byte, del bool, ok bool)
	next()
	err() error
}

// merged overlays sources; earlier sources win on equal keys, and
// tombstones hide keys.
type merged struct {
	srcs []source
}

// viewer runs fn in a kv snapshot; kv.DB is one, and so is pinned.
type viewer interface {
	View(ctx context.Context, fn func(kv.Reader) error) error
}

// pinned is a viewer that reuses one open snapshot, so that the pages of a
// stagingSource cost a scan each and no read transaction.
type pinned struct{ r kv.Reader }

func (p pinned) View(ctx context.Context, fn func(kv.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn(p.r)
}

// newMerged returns the current objects of v: its staging generations,
// read through db, over its head tree.
func (s *Service) newMerged(ctx context.Context, db viewer, v *view) *merged {
	m := &merged{}
	for _, gen := range []uint64{v.br.Gen, v.br.SealedGen} {
		if gen != 0 {
			m.srcs = append(m.srcs, &stagingSource{ctx: ctx, db: db, prefix: stagePrefix(v.rr.ID, v.br.ID, gen)})
		}
	}
	m.srcs = append(m.srcs, newTreeSource(ctx, s.treeFor(v.rr), v.root))
	return m
}

func (m *merged) seek(key string) {
	for _, s := range m.srcs {
		s.seek(key)
	}
}

// peek returns the smallest visible key, skipping tombstones.
func (m *merged) peek() (string, []byte, bool) {
	for {
		var best string
		var bestVal []byte
		var bestDel, found bool
		for _, s := range m.srcs {
			k, v, del, ok := s.peek()
			if !ok {
				continue
			}
			if !found || k < best {
				best, bestVal, bestDel, found = k, v, del, true
			}
		}
		if !found {
			return "", nil, false
		}
		if !bestDel {
			return best, bestVal, true
		}
		m.skip(best)
	}
}

// skip advances every source past key.
func (m *merged) skip(key string) {
	for _, s := range m.srcs {
		if k, _, _, ok := s.peek(); ok && k == key {
			s.next()
		}
	}
}

func (m *merged) next() {
	if k, _, ok := m.peek(); ok {
		m.skip(k)
	}
}

func (m *merged) err() error {
	for _, s := range m.srcs {
		if err := s.err(); err != nil {
			return err
		}
	}
	return nil
}

// stagingSource pages through one staging generation, one kv scan a page.
//
// The first page after a seek asks for stagingFirstPage items, and each
// page read on from there for twice as many as the last, up to
// stagingPage: a listing with a delimiter seeks past every common prefix
// and uses only the first visible item behind it, so anything more read
// there is wasted, while a sequential read soon reads full pages.
type stagingSource struct {
	ctx    context.Context
	db     viewer
	prefix []byte

	buf  []stagedItem
	pos  int
	page int    // size of the current page's request
	from []byte // where the next page starts (absolute kv key)
	done bool   // no more pages
	e    error
}

// stagedItem is one staged key of a page, 48 bytes; its key and entry
// bytes live in two arenas allocated once per page.
type stagedItem struct {
	key   string
	entry []byte // encoded entry; nil for a tombstone
	del   bool
}

const (
	stagingFirstPage = 1
	stagingPage      = 256
)

// seek moves to the first item at or after key; it only moves forward.
func (s *stagingSource) seek(key string) {
	for s.pos < len(s.buf) && s.buf[s.pos].key < key {
		s.pos++
	}
	if s.pos < len(s.buf) || (s.done && s.from != nil) {
		return
	}
	s.from = append(append(s.from[:0], s.prefix...), key...)
	s.done = false
	s.page = stagingFirstPage
	s.fill()
}

func (s *stagingSource) fill() {
	if s.done || s.e != nil {
		return
	}
	s.buf, s.pos = s.buf[:0], 0
	end := kv.PrefixEnd(s.prefix)
	// The arenas grow during the scan; items take their slices of them
	// after it, by offset.
	var keys strings.Builder
	var entries []byte
	type span struct{ key, entry int } // ends in the arenas
	var ends []span
	s.e = s.db.View(s.ctx, func(r kv.Reader) error {
		return r.Scan(kv.Range{Start: s.from, End: end}, func(k, v []byte) error {
			del, _, _, entry, err := parseStaged(v)
			if err != nil {
				return err
			}
			if ends == nil {
				// Sized as if every item were the first one's size.
				keys.Grow(s.page * (len(k) - len(s.prefix)))
				entries = make([]byte, 0, s.page*len(entry))
				ends = make([]span, 0, s.page)
			}
			keys.Write(k[len(s.prefix):])
			entries = append(entries, entry...)
			ends = append(ends, span{keys.Len(), len(entries)})
			s.buf = append(s.buf, stagedItem{del: del})
			if len(s.buf) >= s.page {
				return kv.ErrStop
			}
			return nil
		})
	})
	ks := keys.String()
	var k, e int
	for i, end := range ends {
		it := &s.buf[i]
		it.key = ks[k:end.key]
		if !it.del && end.entry > e {
			it.entry = entries[e:end.entry:end.entry]
		}
		k, e = end.key, end.entry
	}
	if len(s.buf) < s.page {
		s.done = true
	} else {
		last := s.buf[len(s.buf)-1].key
		s.from = append(append(append(s.from[:0], s.prefix...), last...), 0)
	}
}

func (s *stagingSource) peek() (string, []byte, bool, bool) {
	if s.pos >= len(s.buf) {
		if s.done || s.e != nil || s.from == nil {
			return "", nil, false, false
		}
		s.page = min(2*s.page, stagingPage)
		s.fill()
		if s.pos >= len(s.buf) {
			return "", nil, false, false
		}
	}
	it := s.buf[s.pos]
	return it.key, it.entry, it.del, true
}

func (s *stagingSource) next() { s.pos++ }

func (s *stagingSource) err() error { return s.e }
