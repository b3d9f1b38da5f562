package record

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/agentnas/nas/kv"
)

// ProblemKind classifies what Verify found wrong.
type ProblemKind string

// Kinds of problems.
const (
	// ProblemCorrupt: a record, head, manifest page or summary does not
	// decode.
	ProblemCorrupt ProblemKind = "corrupt"
	// ProblemHash: a record's content does not hash to its stored hash (it
	// was edited in place).
	ProblemHash ProblemKind = "hash"
	// ProblemLink: a record's prev_hash is not the previous record's hash
	// (a record before it was edited and rehashed, replaced or inserted).
	ProblemLink ProblemKind = "link"
	// ProblemGap: sequence numbers are missing (records were deleted).
	ProblemGap ProblemKind = "gap"
	// ProblemSeq: a record is stored under another record's sequence
	// number (records were moved or reordered).
	ProblemSeq ProblemKind = "seq"
	// ProblemTime: a record is older than the one before it.
	ProblemTime ProblemKind = "time"
	// ProblemHead: the chain head disagrees with the last record (the tail
	// was deleted or extended, or the head rewritten).
	ProblemHead ProblemKind = "head"
	// ProblemIndex: an index entry is missing, names a missing record, or
	// names a record whose field differs.
	ProblemIndex ProblemKind = "index"
	// ProblemManifest: a read manifest's pages do not match its summary or
	// the binding recorded in an event.
	ProblemManifest ProblemKind = "manifest"
	// ProblemStray: a key in the recorder's key space that it never writes.
	ProblemStray ProblemKind = "stray"
)

// Problem is one inconsistency found by Verify.
type Problem struct {
	Kind ProblemKind `json:"kind"`
	// Seq is the record concerned, 0 when none is.
	Seq uint64 `json:"seq,omitempty"`
	// Key is the raw kv key concerned, Go-quoted.
	Key    string `json:"key,omitempty"`
	Detail string `json:"detail"`
}

// String returns the problem on one line: kind, seq, key and detail.
func (p Problem) String() string {
	s := string(p.Kind)
	if p.Seq != 0 {
		s += " seq " + strconv.FormatUint(p.Seq, 10)
	}
	if p.Key != "" {
		s += " key " + p.Key
	}
	return s + ": " + p.Detail
}

// maxReportProblems bounds VerifyReport.FirstProblems.
const maxReportProblems = 100

// VerifyReport summarizes a Verify walk.
type VerifyReport struct {
	// Records is the number of records walked; Head is the stored chain
	// head and LastHash the stored hash of the last record.
	Records  uint64 `json:"records"`
	Head     Head   `json:"head"`
	LastHash Hash   `json:"last_hash"`
	// IndexEntries counts index entries, Manifests the runs with a read
	// manifest and ManifestPages their pages.
	IndexEntries  uint64 `json:"index_entries"`
	Manifests     uint64 `json:"manifests"`
	ManifestPages uint64 `json:"manifest_pages"`
	// Problems counts every problem; FirstProblems holds the first 100.
	Problems      uint64    `json:"problems"`
	FirstProblems []Problem `json:"first_problems,omitempty"`
}

// OK reports whether Verify found nothing wrong.
func (v *VerifyReport) OK() bool { return v.Problems == 0 }

// binding is a manifest state recorded in an event.
type binding struct {
	seq   uint64
	pages uint64
	hash  Hash
}

// verifier is the state of one Verify walk.
type verifier struct {
	ctx      context.Context
	rd       kv.Reader
	fn       func(Problem)
	rep      VerifyReport
	bindings map[string][]binding // by run
}

func (v *verifier) problem(kind ProblemKind, seq uint64, key []byte, format string, args ...any) {
	p := Problem{Kind: kind, Seq: seq, Detail: fmt.Sprintf(format, args...)}
	if key != nil {
		p.Key = strconv.Quote(string(key))
	}
	v.rep.Problems++
	if len(v.rep.FirstProblems) < maxReportProblems {
		v.rep.FirstProblems = append(v.rep.FirstProblems, p)
	}
	if v.fn != nil {
		v.fn(p)
	}
}

// Verify walks the whole log in one snapshot and reports every
// inconsistency to fn (which may be nil) and in the report: each record
// must decode, hash to its stored hash, link to the previous record's hash,
// carry the sequence number it is stored under with no gaps from 1, and
// not be older than its predecessor; the head must name the last record;
// every index entry must name an existing record with that field value and
// every record must have its index entries; every read manifest's pages
// must chain to its summary's hash and to what events bound. The error is
// non-nil only when the walk itself fails (I/O, ctx); tampering is in the
// report, see VerifyReport.OK.
//
// Verify detects any change that does not rewrite the whole chain after
// the changed record and the head consistently; that needs an external
// anchor, see CheckAnchor.
func (r *Recorder) Verify(ctx context.Context, fn func(Problem)) (VerifyReport, error) {
	var rep VerifyReport
	err := r.db.View(ctx, func(rd kv.Reader) error {
		v := &verifier{ctx: ctx, rd: rd, fn: fn, bindings: make(map[string][]binding)}
		if err := v.chain(); err != nil {
			return err
		}
		if err := v.indexes(); err != nil {
			return err
		}
		if err := v.manifests(); err != nil {
			return err
		}
		rep = v.rep
		return nil
	})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("verify flight recorder: %w", err)
	}
	return rep, nil
}

// chain walks records and the head.
func (v *verifier) chain() error {
	var (
		prev      Hash // stored hash of the previous record
		prevKnown = true
		last      uint64 // seq of the previous record
		lastTime  int64
		headVal   []byte
	)
	err := v.rd.Scan(kv.Prefix(prefixRecorder), func(k, val []byte) error {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		if bytes.Equal(k, keyHead) {
			headVal = bytes.Clone(val)
			return nil
		}
		seq, ok := seqOfEventKey(k)
		if !ok {
			v.problem(ProblemStray, 0, k, "unexpected key among records")
			return nil
		}
		v.rep.Records++
		if seq != last+1 {
			if seq == 0 {
				v.problem(ProblemSeq, seq, k, "sequence numbers start at 1")
			} else {
				v.problem(ProblemGap, seq, k, "records %d to %d are missing", last+1, seq-1)
			}
		}
		last = seq
		e, body, err := decodeRecord(val)
		if err != nil {
			v.problem(ProblemCorrupt, seq, k, "%v", err)
			prevKnown = false
			return nil
		}
		if e.Seq != seq {
			v.problem(ProblemSeq, seq, k, "key holds record %d", e.Seq)
		}
		if got := Hash(sha256.Sum256(body)); got != e.Hash {
			v.problem(ProblemHash, seq, k, "content hashes to %s, stored hash is %s", got, e.Hash)
		}
		if prevKnown && e.PrevHash != prev {
			v.problem(ProblemLink, seq, k, "prev_hash %s, previous record's hash is %s", e.PrevHash, prev)
		}
		if t := e.Time.UnixNano(); t < lastTime {
			v.problem(ProblemTime, seq, k, "time %s is before the previous record's", e.Time)
		} else {
			lastTime = t
		}
		for _, f := range indexFields {
			val := f.value(&e)
			if val == "" {
				continue
			}
			ik := indexKey(f, val, seq)
			if _, err := v.rd.Get(ik); errors.Is(err, kv.ErrNotFound) {
				v.problem(ProblemIndex, seq, ik, "index entry missing")
			} else if err != nil {
				return err
			}
		}
		v.noteBinding(&e)
		prev, prevKnown = e.Hash, true
		v.rep.LastHash = e.Hash
		return nil
	})
	if err != nil {
		return err
	}
	if headVal == nil {
		if v.rep.Records > 0 {
			v.problem(ProblemHead, 0, keyHead, "chain head missing, %d records exist", v.rep.Records)
		}
		return nil
	}
	h, err := decodeHead(headVal)
	if err != nil {
		v.problem(ProblemCorrupt, 0, keyHead, "%v", err)
		return nil
	}
	v.rep.Head = h
	switch {
	case h.Seq != last:
		v.problem(ProblemHead, h.Seq, keyHead, "head names record %d, last record is %d", h.Seq, last)
	case prevKnown && h.Hash != prev:
		v.problem(ProblemHead, h.Seq, keyHead, "head hash %s, last record's hash is %s", h.Hash, prev)
	case h.Time.UnixNano() != lastTime && prevKnown:
		v.problem(ProblemHead, h.Seq, keyHead, "head time %s differs from the last record's", h.Time)
	}
	return nil
}

// noteBinding remembers the manifest state an event recorded.
func (v *verifier) noteBinding(e *Event) {
	ps, ok1 := e.Details[DetailManifestPages]
	hs, ok2 := e.Details[DetailManifestHash]
	if !ok1 && !ok2 {
		return
	}
	run, ok := ManifestRun(e.ReadManifest)
	pages, err1 := strconv.ParseUint(ps, 10, 64)
	hash, err2 := ParseHash(hs)
	if !ok || !ok1 || !ok2 || err1 != nil || err2 != nil {
		v.problem(ProblemManifest, e.Seq, nil, "malformed read manifest binding %q=%q %q=%q",
			DetailManifestPages, ps, DetailManifestHash, hs)
		return
	}
	v.bindings[run] = append(v.bindings[run], binding{seq: e.Seq, pages: pages, hash: hash})
}

// indexes checks that every index entry names a matching record.
func (v *verifier) indexes() error {
	return v.rd.Scan(kv.Prefix(prefixIndex), func(k, _ []byte) error {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		v.rep.IndexEntries++
		f, val, seq, ok := parseIndexKey(k)
		if !ok || !bytes.Equal(k, indexKey(f, val, seq)) {
			v.problem(ProblemStray, 0, k, "malformed index key")
			return nil
		}
		e, err := getEvent(v.rd, seq)
		switch {
		case errors.Is(err, ErrNotFound):
			v.problem(ProblemIndex, seq, k, "index entry names a missing record")
		case errors.Is(err, ErrCorrupt):
			// Reported by the chain walk.
		case err != nil:
			return err
		case f.value(&e) != val:
			v.problem(ProblemIndex, seq, k, "index entry says %q, record says %q", val, f.value(&e))
		}
		return nil
	})
}

// manifestState is the walk of one run's manifest.
type manifestState struct {
	run     string
	pages   uint64
	entries uint64
	bytes   uint64
	hash    Hash
	summary bool
}

// manifests recomputes every run's page chain and compares it with the
// summary and with what events bound.
func (v *verifier) manifests() error {
	var cur *manifestState
	finish := func() {
		if cur == nil {
			return
		}
		if !cur.summary {
			v.problem(ProblemManifest, 0, summaryKey(cur.run), "run %s: %d pages but no summary", cur.run, cur.pages)
		}
		v.checkBindings(cur.run, cur.pages, nil)
		delete(v.bindings, cur.run)
		cur = nil
	}
	err := v.rd.Scan(kv.Prefix(prefixManifest), func(k, val []byte) error {
		if err := v.ctx.Err(); err != nil {
			return err
		}
		run, kind, page, ok := parseManifestKey(k)
		if ok && !bytes.Equal(k, pageKey(run, page)) && !bytes.Equal(k, summaryKey(run)) {
			ok = false
		}
		if !ok {
			v.problem(ProblemStray, 0, k, "malformed read manifest key")
			return nil
		}
		if cur == nil || cur.run != run {
			finish()
			cur = &manifestState{run: run}
			v.rep.Manifests++
		}
		if cur.summary {
			v.problem(ProblemStray, 0, k, "run %s: key after the summary", run)
			return nil
		}
		if kind == manifestSummary {
			cur.summary = true
			s, err := decodeSummary(run, val)
			if err != nil {
				v.problem(ProblemCorrupt, 0, k, "%v", err)
				return nil
			}
			if s.Pages != cur.pages || s.Entries != cur.entries || s.Bytes != cur.bytes || s.Hash != cur.hash {
				v.problem(ProblemManifest, 0, k,
					"run %s: summary says %d pages, %d entries, %d bytes, hash %s; pages give %d, %d, %d, %s",
					run, s.Pages, s.Entries, s.Bytes, s.Hash, cur.pages, cur.entries, cur.bytes, cur.hash)
			}
			return nil
		}
		v.rep.ManifestPages++
		if page != cur.pages+1 {
			v.problem(ProblemManifest, 0, k, "run %s: page %d follows page %d", run, page, cur.pages)
		}
		cur.pages = page
		cur.hash = chainPage(cur.hash, val)
		err := decodePage(val, func(rd Read) error {
			cur.entries++
			cur.bytes += uint64(rd.Length)
			return nil
		})
		if err != nil {
			v.problem(ProblemCorrupt, 0, k, "%v", err)
		}
		v.checkBindings(run, page, &cur.hash)
		return nil
	})
	if err != nil {
		return err
	}
	finish()
	// Bindings to runs without any manifest keys.
	for _, run := range slices.Sorted(maps.Keys(v.bindings)) {
		v.checkBindings(run, 0, nil)
	}
	return nil
}

// checkBindings checks the bindings of run to page count pages against
// hash; with hash nil it reports every remaining binding beyond pages (the
// zero-page bindings of a run without pages are checked here too).
func (v *verifier) checkBindings(run string, pages uint64, hash *Hash) {
	bs := v.bindings[run]
	kept := bs[:0]
	for _, b := range bs {
		switch {
		case hash != nil && b.pages == pages:
			if b.hash != *hash {
				v.problem(ProblemManifest, b.seq, nil, "run %s: event bound page %d to %s, pages give %s", run, pages, b.hash, *hash)
			}
		case hash == nil && b.pages == 0:
			if !b.hash.IsZero() {
				v.problem(ProblemManifest, b.seq, nil, "run %s: event bound an empty manifest to %s", run, b.hash)
			}
		case hash == nil && b.pages > pages:
			v.problem(ProblemManifest, b.seq, nil, "run %s: event bound %d pages, %d exist", run, b.pages, pages)
		default:
			kept = append(kept, b)
		}
	}
	v.bindings[run] = kept
}
