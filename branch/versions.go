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
		base := keyVersionsPrefix(v.rr.ID)
		// The escaped prefix without its terminator bounds the scan.
		esc := escKey(append([]byte(nil), base...), o.Prefix)
		esc = esc[:len(esc)-2]
		rng := kv.Prefix(esc)
		if o.KeyMarker != "" {
			var start []byte
			if seq, ok := versionSeq(o.VersionIDMarker); ok {
				start = keyVersionKey(v.rr.ID, o.KeyMarker, seq)
				start = append(start, 0) // strictly after the marker version
			} else {
				start = escKey(append([]byte(nil), base...), o.KeyMarker)
				start = append(start, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
			}
			if bytes.Compare(start, rng.Start) > 0 {
				rng.Start = start
			}
		}
		lastKey, latestDone := "", false
		if o.KeyMarker != "" && o.VersionIDMarker != "" {
			lastKey, latestDone = o.KeyMarker, true
		}
		count := 0
		var skipUntil string // set while skipping keys inside a common prefix
		var haveSkip bool
		visit := func(k, vid []byte) error {
			key, rest, ok := unescKey(k[len(base):])
			if !ok || len(rest) != 8 {
				return nil
			}
			seq := math.MaxUint64 - binary.BigEndian.Uint64(rest)
			if !o.Filter.match(key) {
				return nil
			}
			if haveSkip {
				if strings.HasPrefix(key, skipUntil) {
					return nil
				}
				haveSkip = false
			}
			if o.Delimiter != "" {
				if i := strings.Index(key[len(o.Prefix):], o.Delimiter); i >= 0 {
					cp := key[:len(o.Prefix)+i+len(o.Delimiter)]
					skipUntil, haveSkip = cp, true
					if o.KeyMarker != "" && cp <= o.KeyMarker && strings.HasPrefix(o.KeyMarker, cp) {
						return nil
					}
					// Only a prefix holding a visible version is listed.
					if visible, err := s.visibleVersion(r, v, string(vid), seq); err != nil || !visible {
						haveSkip = false
						return err
					}
					if count >= o.MaxKeys {
						res.Truncated = true
						return kv.ErrStop
					}
					res.CommonPrefixes = append(res.CommonPrefixes, cp)
					res.NextKeyMarker, res.NextVersionIDMarker = cp, ""
					count++
					return nil
				}
			}
			b, err := r.Get(versionKey(v.rr.ID, string(vid)))
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
			if rec.key != key || !sees(v.br.Lineage, rec.branch, rec.seq) {
				return nil
			}
			if count >= o.MaxKeys {
				res.Truncated = true
				return kv.ErrStop
			}
			if key != lastKey {
				lastKey, latestDone = key, false
			}
			ver := Version{Key: key, VersionID: rec.vid, DeleteMarker: rec.del, IsLatest: !latestDone}
			latestDone = true
			if !rec.del {
				e, err := manifest.DecodeEntry(rec.entry)
				if err != nil {
					return err
				}
				ver.Entry, ver.ModTime = e, e.ModTime
			} else {
				ver.ModTime = int64(rec.seq)
			}
			res.Versions = append(res.Versions, ver)
			res.NextKeyMarker, res.NextVersionIDMarker = key, rec.vid
			count++
			return nil
		}
		// Only the filter's ranges are scanned; escaping keeps key order.
		pe, _ := prefixEnd(o.Prefix)
		for _, kr := range o.Filter.ranges(o.Prefix, pe) {
			sub := rng
			if st := escPrefix(base, kr.Start); bytes.Compare(st, sub.Start) > 0 {
				sub.Start = st
			}
			if kr.End != "" {
				if e := escPrefix(base, kr.End); sub.End == nil || bytes.Compare(e, sub.End) < 0 {
					sub.End = e
				}
			}
			if sub.End != nil && bytes.Compare(sub.Start, sub.End) >= 0 {
				continue
			}
			if err := r.Scan(sub, visit); err != nil || res.Truncated {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !res.Truncated {
		res.NextKeyMarker, res.NextVersionIDMarker = "", ""
	}
	return res, nil
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
