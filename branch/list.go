package branch

import (
	"bytes"
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
}

// Filter restricts a listing to the keys a principal can see: only the
// Ranges are scanned (so hidden data outside them costs nothing), and only
// keys Match accepts are listed or make a common prefix appear.
type Filter struct {
	Ranges []KeyRange // sorted, disjoint; End "" is unbounded
	Match  func(key string) bool
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
}

// List lists a branch's current objects (staging over the head tree).
func (s *Service) List(ctx context.Context, repo, branch string, o ListOptions) (*ListResult, error) {
	var v *view
	err := s.db.View(ctx, func(r kv.Reader) (err error) {
		v, err = s.openView(ctx, r, repo, branch)
		return err
	})
	if err != nil {
		return nil, err
	}
	m := s.newMerged(ctx, v)
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
			e, err := manifest.DecodeEntry(val)
			if err != nil {
				return nil, err
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

func (s *Service) newMerged(ctx context.Context, v *view) *merged {
	m := &merged{}
	for _, gen := range []uint64{v.br.Gen, v.br.SealedGen} {
		if gen != 0 {
			m.srcs = append(m.srcs, &stagingSource{ctx: ctx, db: s.db, prefix: stagePrefix(v.rr.ID, v.br.ID, gen)})
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

// stagingSource pages through one staging generation.
type stagingSource struct {
	ctx    context.Context
	db     kv.DB
	prefix []byte

	buf  []stagedItem
	pos  int
	from []byte // where the next page starts (absolute kv key)
	done bool   // no more pages
	e    error
}

type stagedItem struct {
	key string
	st  staged
}

const stagingPage = 256

// seek moves to the first item at or after key; it only moves forward.
func (s *stagingSource) seek(key string) {
	for s.pos < len(s.buf) && s.buf[s.pos].key < key {
		s.pos++
	}
	if s.pos < len(s.buf) || (s.done && s.from != nil) {
		return
	}
	s.from = append(append([]byte(nil), s.prefix...), key...)
	s.done = false
	s.fill()
}

func (s *stagingSource) fill() {
	if s.done || s.e != nil {
		return
	}
	s.buf, s.pos = s.buf[:0], 0
	end := kv.PrefixEnd(s.prefix)
	var last []byte
	s.e = s.db.View(s.ctx, func(r kv.Reader) error {
		return r.Scan(kv.Range{Start: s.from, End: end}, func(k, v []byte) error {
			st, err := decodeStaged(v)
			if err != nil {
				return err
			}
			s.buf = append(s.buf, stagedItem{key: string(k[len(s.prefix):]), st: st})
			last = k
			if len(s.buf) >= stagingPage {
				return kv.ErrStop
			}
			return nil
		})
	})
	if len(s.buf) < stagingPage {
		s.done = true
	} else {
		s.from = append(bytes.Clone(last), 0)
	}
}

func (s *stagingSource) peek() (string, []byte, bool, bool) {
	if s.pos >= len(s.buf) {
		if s.done || s.e != nil || s.from == nil {
			return "", nil, false, false
		}
		s.fill()
		if s.pos >= len(s.buf) {
			return "", nil, false, false
		}
	}
	it := s.buf[s.pos]
	return it.key, it.st.entry, it.st.del, true
}

func (s *stagingSource) next() { s.pos++ }

func (s *stagingSource) err() error { return s.e }
