package branch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// VersionListOptions selects a page of ListVersions.
type VersionListOptions struct {
	Prefix          string
	Delimiter       string
	KeyMarker       string
	VersionIDMarker string
	MaxKeys         int
	// Filter, when set, hides every key it does not match.
	Filter *Filter
}

// Version is one listed version or delete marker.
type Version struct {
	Key          string
	VersionID    string
	IsLatest     bool
	DeleteMarker bool
	ModTime      int64
	Entry        *manifest.Entry // nil for a delete marker
}

// VersionListResult is one page of ListVersions.
type VersionListResult struct {
	Versions            []Version
	CommonPrefixes      []string
	Truncated           bool
	NextKeyMarker       string
	NextVersionIDMarker string
}

// ListVersions lists every version a branch has seen, newest first per key,
// keys in order.
func (s *Service) ListVersions(ctx context.Context, repo, branch string, o VersionListOptions) (*VersionListResult, error) {
	res := &VersionListResult{}
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := s.openView(ctx, r, repo, branch)
		if err != nil {
			return err
		}
		l := &versionLister{s: s, r: r, v: v, o: o, res: res, base: keyVersionsPrefix(v.rr.ID)}
		if o.KeyMarker != "" && o.VersionIDMarker != "" {
			l.lastKey, l.latestDone = o.KeyMarker, true
		}
		return l.scan(versionRange(l.base, v.rr.ID, &l.o))
	})
	if err != nil {
		return nil, err
	}
	if !res.Truncated {
		res.NextKeyMarker, res.NextVersionIDMarker = "", ""
	}
	return res, nil
}

// versionRange returns the range of key-version records under base that
// a listing with o scans: those of keys with o.Prefix, after the markers.
func versionRange(base []byte, repoID uint64, o *VersionListOptions) kv.Range {
	// The escaped prefix without its terminator bounds the scan.
	esc := escKey(append([]byte(nil), base...), o.Prefix)
	esc = esc[:len(esc)-2]
	rng := kv.Prefix(esc)
	if o.KeyMarker != "" {
		var start []byte
		if seq, ok := versionSeq(o.VersionIDMarker); ok {
			start = keyVersionKey(repoID, o.KeyMarker, seq)
			start = append(start, 0) // strictly after the marker version
		} else {
			start = escKey(append([]byte(nil), base...), o.KeyMarker)
			start = append(start, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}
		if bytes.Compare(start, rng.Start) > 0 {
			rng.Start = start
		}
	}
	return rng
}

// versionLister is one ListVersions page being filled, inside its read
// transaction r.
type versionLister struct {
	s    *Service
	r    kv.Reader
	v    *view
	o    VersionListOptions
	res  *VersionListResult
	base []byte // the repository's key-version prefix
	// lastKey is the key listed last; latestDone is set once its newest
	// visible version is listed (IsLatest goes to that one only).
	lastKey    string
	latestDone bool
	count      int    // versions and common prefixes listed
	skipUntil  string // set while skipping keys inside a common prefix
	haveSkip   bool
}

// scan visits the key-version records in rng that the filter's ranges
// hold, until the page is full.
func (l *versionLister) scan(rng kv.Range) error {
	o := &l.o
	visit := l.visit
	// Only the filter's ranges are scanned; escaping keeps key order.
	pe, _ := prefixEnd(o.Prefix)
	for _, kr := range o.Filter.ranges(o.Prefix, pe) {
		sub := rng
		if st := escPrefix(l.base, kr.Start); bytes.Compare(st, sub.Start) > 0 {
			sub.Start = st
		}
		if kr.End != "" {
			if e := escPrefix(l.base, kr.End); sub.End == nil || bytes.Compare(e, sub.End) < 0 {
				sub.End = e
			}
		}
		if sub.End != nil && bytes.Compare(sub.Start, sub.End) >= 0 {
			continue
		}
		if err := l.r.Scan(sub, visit); err != nil || l.res.Truncated {
			return err
		}
	}
	return nil
}

// visit lists the key-version record k (valued with its version ID vid),
// or the common prefix its key falls in, unless it is hidden.
func (l *versionLister) visit(k, vid []byte) error {
	o := &l.o
	key, rest, ok := unescKey(k[len(l.base):])
	if !ok || len(rest) != 8 {
		return nil
	}
	seq := math.MaxUint64 - binary.BigEndian.Uint64(rest)
	if !o.Filter.match(key) {
		return nil
	}
	if l.haveSkip {
		if strings.HasPrefix(key, l.skipUntil) {
			return nil
		}
		l.haveSkip = false
	}
	if o.Delimiter != "" {
		if i := strings.Index(key[len(o.Prefix):], o.Delimiter); i >= 0 {
			return l.commonPrefix(key[:len(o.Prefix)+i+len(o.Delimiter)], vid, seq)
		}
	}
	return l.version(key, vid)
}

// commonPrefix lists common prefix cp, met at version vid (sequence seq)
// of a key under it, and skips the rest of its keys; a prefix is listed
// only once it holds a visible version.
func (l *versionLister) commonPrefix(cp string, vid []byte, seq uint64) error {
	o, res := &l.o, l.res
	l.skipUntil, l.haveSkip = cp, true
	if o.KeyMarker != "" && cp <= o.KeyMarker && strings.HasPrefix(o.KeyMarker, cp) {
		return nil
	}
	// Only a prefix holding a visible version is listed.
	if visible, err := l.s.visibleVersion(l.r, l.v, string(vid), seq); err != nil || !visible {
		l.haveSkip = false
		return err
	}
	if l.count >= o.MaxKeys {
		res.Truncated = true
		return kv.ErrStop
	}
	res.CommonPrefixes = append(res.CommonPrefixes, cp)
	res.NextKeyMarker, res.NextVersionIDMarker = cp, ""
	l.count++
	return nil
}

// version lists version vid of key if the branch sees it.
func (l *versionLister) version(key string, vid []byte) error {
	res := l.res
	b, err := l.r.Get(versionKey(l.v.rr.ID, string(vid)))
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	rec, err := decodeVersion(b)
	if err != nil {
		return err
	}
	if rec.key != key || !sees(l.v.br.Lineage, rec.branch, rec.seq) {
		return nil
	}
	var e *manifest.Entry
	if !rec.del {
		if e, err = manifest.DecodeEntry(rec.entry); err != nil {
			return err
		}
	}
	if key != l.lastKey {
		l.lastKey, l.latestDone = key, false
	}
	if e != nil && l.o.Filter != nil && l.o.Filter.Entry != nil && !l.o.Filter.Entry(key, e) {
		l.latestDone = true // a hidden latest version is still the latest: no older one claims it
		return nil
	}
	if l.count >= l.o.MaxKeys {
		res.Truncated = true
		return kv.ErrStop
	}
	ver := Version{Key: key, VersionID: rec.vid, DeleteMarker: rec.del, IsLatest: !l.latestDone}
	l.latestDone = true
	if e != nil {
		ver.Entry, ver.ModTime = e, e.ModTime
	} else {
		ver.ModTime = int64(rec.seq)
	}
	res.Versions = append(res.Versions, ver)
	res.NextKeyMarker, res.NextVersionIDMarker = key, rec.vid
	l.count++
	return nil
}

// visibleVersion reports whether version vid is in v's lineage.
func (s *Service) visibleVersion(r kv.Reader, v *view, vid string, seq uint64) (bool, error) {
	b, err := r.Get(versionKey(v.rr.ID, vid))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	rec, err := decodeVersion(b)
	if err != nil {
		return false, err
	}
	return sees(v.br.Lineage, rec.branch, rec.seq), nil
}

// escPrefix is the escaped form of key without its terminator: the escaped
// form of every key that starts with key sorts at or after it.
func escPrefix(base []byte, key string) []byte {
	e := escKey(append([]byte(nil), base...), key)
	return e[:len(e)-2]
}
