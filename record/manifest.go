package record

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/kv"
)

// Read is one entry of a run's read manifest: a byte range of an object
// version and the content hashes that cover it, never the content. Entries
// for adjacent or overlapping ranges of the same object read close together
// in time are merged into one.
type Read struct {
	Path      string `json:"path"`
	Commit    string `json:"commit,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	// Offset and Length give the byte range read; a stat or an open that
	// reads nothing is Length 0.
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
	// ETag is the object's ETag; ContentHashes are the hashes of the chunks
	// the range covers, when the reader knows them.
	ETag          string   `json:"etag,omitempty"`
	ContentHashes []string `json:"content_hashes,omitempty"`
	// Time is when the range was first read; Add fills in the zero Time.
	Time time.Time `json:"time"`
}

// Limits on one Read.
const (
	MaxContentHashes  = 1024 // content hashes in one Read, merged or not
	MaxContentHashLen = 128  // bytes in one content hash
)

// objKey identifies the object version a Read covers; only reads of the
// same objKey merge.
type objKey struct{ path, commit, versionID, etag string }

func keyOf(rd *Read) objKey { return objKey{rd.Path, rd.Commit, rd.VersionID, rd.ETag} }

// readSize is the memory a buffered Read is charged, roughly.
func readSize(rd *Read) int {
	n := 96 + len(rd.Path) + len(rd.Commit) + len(rd.VersionID) + len(rd.ETag)
	for _, h := range rd.ContentHashes {
		n += 16 + len(h)
	}
	return n
}

func (rd *Read) validate() error {
	if rd.Path == "" {
		return fmt.Errorf("read: empty path: %w", ErrInvalid)
	}
	if rd.Offset < 0 || rd.Length < 0 || rd.Length > math.MaxInt64-rd.Offset {
		return fmt.Errorf("read %s: range %d+%d: %w", rd.Path, rd.Offset, rd.Length, ErrInvalid)
	}
	for _, s := range []string{rd.Path, rd.Commit, rd.VersionID, rd.ETag} {
		if err := checkString(s); err != nil {
			return fmt.Errorf("read %s: %w", rd.Path, err)
		}
	}
	if !rd.Time.IsZero() && (rd.Time.Before(minTime) || rd.Time.After(maxTime)) {
		return fmt.Errorf("read %s: time %s out of range: %w", rd.Path, rd.Time, ErrInvalid)
	}
	if len(rd.ContentHashes) > MaxContentHashes {
		return fmt.Errorf("read %s: %d content hashes, limit %d: %w", rd.Path, len(rd.ContentHashes), MaxContentHashes, ErrInvalid)
	}
	for _, h := range rd.ContentHashes {
		if len(h) > MaxContentHashLen || !validUTF8(h) {
			return fmt.Errorf("read %s: content hash %.16q...: %w", rd.Path, h, ErrInvalid)
		}
	}
	return nil
}

// Times are stored as Unix nanoseconds; these bound what fits.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

func validUTF8(s string) bool { return checkString(s) == nil }

// mergeInto extends a by b when their ranges overlap or touch and the
// merged hash list stays within MaxContentHashes; it reports whether it did.
func mergeInto(a *Read, b *Read) bool {
	aEnd, bEnd := a.Offset+a.Length, b.Offset+b.Length
	if b.Offset > aEnd || a.Offset > bEnd {
		return false
	}
	hashes := a.ContentHashes
	for _, h := range b.ContentHashes {
		if !slices.Contains(hashes, h) {
			if len(hashes) == MaxContentHashes {
				return false
			}
			hashes = append(hashes, h)
		}
	}
	a.ContentHashes = hashes
	a.Offset = min(a.Offset, b.Offset)
	a.Length = max(aEnd, bEnd) - a.Offset
	if b.Time.Before(a.Time) {
		a.Time = b.Time
	}
	return true
}

// coalesce merges every overlapping or adjacent pair of reads of the same
// object, whatever their order, and keeps the result in the order each
// merged entry was first read.
func coalesce(reads []Read) []Read {
	type item struct {
		rd  Read
		pos int
	}
	groups := make(map[objKey][]item)
	var order []objKey
	for i := range reads {
		k := keyOf(&reads[i])
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], item{reads[i], i})
	}
	out := make([]item, 0, len(reads))
	for _, k := range order {
		g := groups[k]
		slices.SortStableFunc(g, func(a, b item) int {
			return cmp.Compare(a.rd.Offset, b.rd.Offset)
		})
		cur := g[0]
		cur.rd.ContentHashes = slices.Clone(cur.rd.ContentHashes)
		for _, it := range g[1:] {
			if mergeInto(&cur.rd, &it.rd) {
				cur.pos = min(cur.pos, it.pos)
				continue
			}
			out = append(out, cur)
			cur = it
			cur.rd.ContentHashes = slices.Clone(cur.rd.ContentHashes)
		}
		out = append(out, cur)
	}
	slices.SortFunc(out, func(a, b item) int { return a.pos - b.pos })
	res := make([]Read, len(out))
	for i := range out {
		res[i] = out[i].rd
	}
	return res
}

// ManifestID returns the ID by which events name run's read manifest.
func ManifestID(run string) string { return "rm_" + run }

// ManifestRun returns the run whose read manifest id names.
func ManifestRun(id string) (string, bool) {
	run, ok := strings.CutPrefix(id, "rm_")
	return run, ok && run != ""
}

// ManifestSummary describes a run's flushed read manifest. Hash chains its
// pages: h0 is the zero Hash and hN = SHA-256(hN-1 || page N as stored).
type ManifestSummary struct {
	ID      string    `json:"id"`
	Run     string    `json:"run"`
	Pages   uint64    `json:"pages"`
	Entries uint64    `json:"entries"`
	Bytes   uint64    `json:"bytes"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Hash    Hash      `json:"hash"`
}

const summarySize = 1 + 5*8 + sha256.Size

func encodeSummary(s *ManifestSummary) []byte {
	b := make([]byte, 0, summarySize)
	b = append(b, formatV1)
	for _, x := range []uint64{s.Pages, s.Entries, s.Bytes, uint64(s.First.UnixNano()), uint64(s.Last.UnixNano())} {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	return append(b, s.Hash[:]...)
}

func decodeSummary(run string, v []byte) (ManifestSummary, error) {
	s := ManifestSummary{ID: ManifestID(run), Run: run}
	if len(v) != summarySize || v[0] != formatV1 {
		return s, fmt.Errorf("manifest summary of %s: %w", run, ErrCorrupt)
	}
	d := decoder{b: v[1:]}
	s.Pages, s.Entries, s.Bytes = d.uint64(), d.uint64(), d.uint64()
	s.First = time.Unix(0, int64(d.uint64())).UTC()
	s.Last = time.Unix(0, int64(d.uint64())).UTC()
	copy(s.Hash[:], d.fixed(sha256.Size))
	return s, nil
}

// readSummary returns run's summary or an error wrapping ErrNoSuchManifest.
func readSummary(rd kv.Reader, run string) (ManifestSummary, error) {
	v, err := rd.Get(summaryKey(run))
	if errors.Is(err, kv.ErrNotFound) {
		return ManifestSummary{}, fmt.Errorf("run %s: %w", run, ErrNoSuchManifest)
	}
	if err != nil {
		return ManifestSummary{}, fmt.Errorf("read manifest summary %s: %w", run, err)
	}
	return decodeSummary(run, v)
}

// chainPage returns the manifest chain hash after appending page to prev.
func chainPage(prev Hash, page []byte) Hash {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(page)
	return Hash(h.Sum(nil))
}

// maxPageBytes bounds an encoded page (a single larger entry gets a page of
// its own), keeping each flush transaction small.
const maxPageBytes = 512 << 10

// encodePage encodes a prefix of reads of at most maxCount entries and
// about maxPageBytes and returns how many it took.
func encodePage(reads []Read, maxCount int) (int, []byte) {
	b := []byte{formatV1}
	n := 0
	var body []byte
	for n < len(reads) && n < maxCount {
		before := len(body)
		body = appendRead(body, &reads[n])
		if n > 0 && len(body) > maxPageBytes {
			body = body[:before]
			break
		}
		n++
	}
	b = binary.AppendUvarint(b, uint64(n))
	return n, append(b, body...)
}

func appendRead(b []byte, rd *Read) []byte {
	for _, s := range []string{rd.Path, rd.Commit, rd.VersionID, rd.ETag} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(rd.Offset))
	b = binary.AppendUvarint(b, uint64(rd.Length))
	b = binary.BigEndian.AppendUint64(b, uint64(rd.Time.UnixNano()))
	b = binary.AppendUvarint(b, uint64(len(rd.ContentHashes)))
	for _, h := range rd.ContentHashes {
		b = appendString(b, h)
	}
	return b
}

// decodePage calls fn for each Read of a stored page.
func decodePage(v []byte, fn func(Read) error) error {
	if len(v) == 0 || v[0] != formatV1 {
		return fmt.Errorf("manifest page: %w", ErrCorrupt)
	}
	d := decoder{b: v[1:]}
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		var rd Read
		rd.Path, rd.Commit, rd.VersionID, rd.ETag = d.string(), d.string(), d.string(), d.string()
		off, length := d.uvarint(), d.uvarint()
		if off > math.MaxInt64 || length > math.MaxInt64-off {
			d.err = errors.New("range overflows")
			break
		}
		rd.Offset, rd.Length = int64(off), int64(length)
		rd.Time = time.Unix(0, int64(d.uint64())).UTC()
		nh := d.uvarint()
		if nh > uint64(len(d.b)) {
			d.err = errors.New("hash count exceeds page")
			break
		}
		if nh > 0 {
			rd.ContentHashes = make([]string, nh)
			for j := range rd.ContentHashes {
				rd.ContentHashes[j] = d.string()
			}
		}
		if d.err != nil {
			break
		}
		if err := fn(rd); err != nil {
			return err
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("manifest page: %w: %w", d.err, ErrCorrupt)
	}
	return nil
}

// ManifestOptions tunes Manifests; the zero value is the default.
type ManifestOptions struct {
	// BatchSize is the number of buffered entries of one run that makes
	// Run flush early, and the most entries a stored page holds
	// (default 256).
	BatchSize int
	// FlushInterval is how long Run lets reads wait in memory (default 1s).
	FlushInterval time.Duration
	// MaxBuffered and MaxBufferedBytes bound the buffer over all runs
	// (defaults 4096 entries, 4 MiB); an Add that reaches either flushes
	// everything before it returns.
	MaxBuffered      int
	MaxBufferedBytes int
	// Now stamps reads that come without a time; nil means time.Now.
	Now func() time.Time
	// Logger receives failures of Run's background flushes (the reads stay
	// buffered and are retried); nil discards them.
	Logger *slog.Logger
}

// Manifests buffers the reads of every run in memory and writes them to
// each run's read manifest in batches: when Run's timer fires, when a run
// has BatchSize entries, on Flush, FlushAll and Close, and synchronously in
// Add when the buffer is full. Within a batch, reads of adjacent or
// overlapping ranges of one object version merge into one entry, so a
// sequential read of a large file costs one entry per flush.
//
// Reads are durable only once flushed; a crash loses at most the reads of
// the last FlushInterval. A caller that needs a run's manifest complete
// before acting (before a commit that names it, say) calls Flush first.
//
// Manifests is safe for concurrent use. It starts no goroutines: the caller
// runs Run and calls Close.
type Manifests struct {
	db kv.DB
	o  ManifestOptions

	kick chan struct{} // buffered; Add asks Run to flush early
	stop chan struct{} // closed by Close

	// flushMu serializes writers of pages, so that a run's pages are
	// written in the order its reads were taken from the buffer.
	flushMu sync.Mutex

	mu      sync.Mutex          // guards the fields below
	runs    map[string]*pending // buffered reads per run
	entries int                 // buffered entries over all runs
	bytes   int                 // readSize of buffered entries over all runs
	closed  bool
	running sync.WaitGroup // Run loops; Add is called only under mu while !closed
}

// pending is one run's buffered reads.
type pending struct {
	reads []Read
	last  map[objKey]int // index in reads of the latest entry of each object
	bytes int
}

func newPending() *pending { return &pending{last: make(map[objKey]int)} }

// add merges rd into the object's latest entry when it can, else appends
// it; it returns the change in entries and bytes.
func (p *pending) add(rd Read) (int, int) {
	k := keyOf(&rd)
	if i, ok := p.last[k]; ok {
		a := &p.reads[i]
		before := readSize(a)
		if mergeInto(a, &rd) {
			d := readSize(a) - before
			p.bytes += d
			return 0, d
		}
	}
	rd.ContentHashes = slices.Clone(rd.ContentHashes)
	p.reads = append(p.reads, rd)
	p.last[k] = len(p.reads) - 1
	d := readSize(&rd)
	p.bytes += d
	return 1, d
}

// NewManifests returns an empty buffer over db.
func NewManifests(db kv.DB, o ManifestOptions) *Manifests {
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.MaxBuffered <= 0 {
		o.MaxBuffered = 4096
	}
	if o.MaxBufferedBytes <= 0 {
		o.MaxBufferedBytes = 4 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Manifests{db: db, o: o, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		runs: make(map[string]*pending)}
}

// Add buffers one read of run. It returns quickly unless the buffer is
// full (MaxBuffered entries or MaxBufferedBytes), in which case it flushes
// every run and returns the flush's error, the read itself staying
// buffered. When flushes keep failing and the buffer reaches twice its
// bounds, Add refuses the read and returns the error: a caller that must
// not serve unrecorded reads fails the read.
func (m *Manifests) Add(ctx context.Context, run string, rd Read) error {
	if run == "" {
		return fmt.Errorf("read manifest: empty run: %w", ErrInvalid)
	}
	if err := checkString(run); err != nil {
		return fmt.Errorf("read manifest: run: %w", err)
	}
	if err := rd.validate(); err != nil {
		return err
	}
	if rd.Time.IsZero() {
		rd.Time = m.o.Now()
	}
	rd.Time = rd.Time.UTC()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	if m.entries >= 2*m.o.MaxBuffered || m.bytes >= 2*m.o.MaxBufferedBytes {
		// Flushes have been failing: memory stays bounded, and this
		// read is refused rather than silently dropped.
		m.mu.Unlock()
		if err := m.FlushAll(ctx); err != nil {
			return fmt.Errorf("read manifest buffer full: %w", err)
		}
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return ErrClosed
		}
	}
	p := m.runs[run]
	if p == nil {
		p = newPending()
		m.runs[run] = p
	}
	de, db := p.add(rd)
	m.entries += de
	m.bytes += db
	full := m.entries >= m.o.MaxBuffered || m.bytes >= m.o.MaxBufferedBytes
	early := len(p.reads) >= m.o.BatchSize
	m.mu.Unlock()
	if full {
		return m.FlushAll(ctx)
	}
	if early {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Flush makes every buffered read of run durable.
func (m *Manifests) Flush(ctx context.Context, run string) error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	return m.flushRuns(ctx, []string{run})
}

// FlushAll makes every buffered read durable.
func (m *Manifests) FlushAll(ctx context.Context) error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	runs := slices.Sorted(maps.Keys(m.runs))
	m.mu.Unlock()
	return m.flushRuns(ctx, runs)
}

// flushRuns takes the runs' reads out of the buffer and writes them; what
// could not be written goes back to the front of the buffer. flushMu is held.
func (m *Manifests) flushRuns(ctx context.Context, runs []string) error {
	taken := make([]*pending, len(runs))
	m.mu.Lock()
	for i, run := range runs {
		p := m.runs[run]
		if p == nil {
			continue
		}
		delete(m.runs, run)
		m.entries -= len(p.reads)
		m.bytes -= p.bytes
		taken[i] = p
	}
	m.mu.Unlock()
	var firstErr error
	for i, run := range runs {
		p := taken[i]
		if p == nil {
			continue
		}
		var rest []Read
		if firstErr == nil {
			reads := coalesce(p.reads)
			n, err := m.writeRun(ctx, run, reads)
			if err != nil {
				firstErr = fmt.Errorf("flush read manifest of %s: %w", run, err)
			}
			rest = reads[n:]
		} else {
			rest = p.reads
		}
		if len(rest) > 0 {
			m.requeue(run, rest)
		}
	}
	return firstErr
}

// requeue puts unwritten reads back in front of run's buffer.
func (m *Manifests) requeue(run string, reads []Read) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := newPending()
	old := m.runs[run]
	if old != nil {
		m.entries -= len(old.reads)
		m.bytes -= old.bytes
		reads = append(reads, old.reads...)
	}
	for _, rd := range reads {
		de, db := p.add(rd)
		m.entries += de
		m.bytes += db
	}
	m.runs[run] = p
}

// writeRun appends reads to run's manifest, one transaction per page, and
// returns how many it wrote.
func (m *Manifests) writeRun(ctx context.Context, run string, reads []Read) (int, error) {
	done := 0
	for done < len(reads) {
		n, page := encodePage(reads[done:], m.o.BatchSize)
		batch := reads[done : done+n]
		err := m.db.Update(ctx, func(txn kv.Txn) error {
			s, err := readSummary(txn, run)
			if errors.Is(err, ErrNotFound) {
				s = ManifestSummary{}
			} else if err != nil {
				return err
			}
			for i := range batch {
				rd := &batch[i]
				s.Bytes += uint64(rd.Length)
				if s.Entries == 0 && i == 0 || rd.Time.Before(s.First) {
					s.First = rd.Time
				}
				if rd.Time.After(s.Last) {
					s.Last = rd.Time
				}
			}
			s.Entries += uint64(n)
			s.Pages++
			s.Hash = chainPage(s.Hash, page)
			if err := txn.Set(pageKey(run, s.Pages), page); err != nil {
				return err
			}
			return txn.Set(summaryKey(run), encodeSummary(&s))
		})
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

// Run flushes buffered reads every FlushInterval, and early when a run has
// BatchSize entries, until ctx ends (returning its error) or Close is called
// (returning nil). Failed flushes are logged and retried on the next tick.
func (m *Manifests) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.running.Add(1)
	m.mu.Unlock()
	defer m.running.Done()
	t := time.NewTicker(m.o.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.stop:
			return nil
		case <-t.C:
		case <-m.kick:
		}
		if err := m.FlushAll(ctx); err != nil && m.o.Logger != nil && ctx.Err() == nil {
			m.o.Logger.Warn("flight recorder: flushing read manifests", "err", err)
		}
	}
}

// Close stops Run, flushes every buffered read and refuses further Adds. It
// returns the final flush's error; reads that could not be written are lost.
func (m *Manifests) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.stop)
	m.mu.Unlock()
	m.running.Wait()
	return m.FlushAll(context.Background())
}

// Buffered returns the number of entries waiting to be flushed.
func (m *Manifests) Buffered() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries
}

// ReadManifest calls fn for every flushed read of run, in the order the
// reads were flushed (within a flush, in the order each merged entry was
// first read). Returning ErrStop from fn ends the stream without error. A
// run with no flushed reads yields nothing and no error.
func (r *Recorder) ReadManifest(ctx context.Context, run string, fn func(Read) error) error {
	return r.db.View(ctx, func(rd kv.Reader) error {
		return scanManifest(ctx, rd, run, fn)
	})
}

func scanManifest(ctx context.Context, rd kv.Reader, run string, fn func(Read) error) error {
	prefix := append(manifestPrefix(run), manifestPage)
	err := rd.Scan(kv.Prefix(prefix), func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := decodePage(v, fn); err != nil {
			if errors.Is(err, ErrCorrupt) {
				return fmt.Errorf("run %s: %w", run, err)
			}
			return err
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrStop) {
		return err
	}
	return nil
}

// ManifestSummary returns the summary of run's flushed read manifest, or an
// error wrapping ErrNoSuchManifest.
func (r *Recorder) ManifestSummary(ctx context.Context, run string) (ManifestSummary, error) {
	var s ManifestSummary
	err := r.db.View(ctx, func(rd kv.Reader) error {
		var err error
		s, err = readSummary(rd, run)
		return err
	})
	return s, err
}
