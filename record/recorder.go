package record

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/agentnas/nas/kv"
)

// Options tunes a Recorder; the zero value is the default.
type Options struct {
	// Now is the clock that stamps records; nil means time.Now.
	Now func() time.Time
	// MaxBatch bounds how many concurrent Append calls share one kv
	// transaction (default 256).
	MaxBatch int
	// ExplainEvents bounds the run events Explain returns (default 1000).
	ExplainEvents int
	// ExplainReads bounds the read-manifest entries Explain returns
	// (default 100).
	ExplainReads int
}

// maxBatchBytes bounds the encoded records of one group commit, well below
// what one kv transaction can hold.
const maxBatchBytes = 1 << 20

// Recorder appends events to the chain and reads events, read manifests and
// explanations back. It is safe for concurrent use and starts no goroutines.
type Recorder struct {
	db   kv.DB
	opts Options

	// wmu serializes this process's transactions that append (group
	// commits and Update), which would otherwise conflict on the chain
	// head and starve each other.
	wmu sync.Mutex

	qmu     sync.Mutex   // guards queue and leading
	queue   []*appendReq // Append calls waiting for a group commit
	leading bool         // an Append call is writing a batch
}

// New returns a Recorder over db.
func New(db kv.DB, opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.ExplainEvents <= 0 {
		opts.ExplainEvents = 1000
	}
	if opts.ExplainReads <= 0 {
		opts.ExplainReads = 100
	}
	return &Recorder{db: db, opts: opts}
}

// appendReq is one Append call in the group-commit queue.
type appendReq struct {
	ctx  context.Context
	e    Event
	size int
	out  Event
	err  error
	lead bool          // set before wake when the call must write the next batch
	wake chan struct{} // buffered; signalled when out/err are set or lead is
}

// Append assigns e its seq, time, prev_hash and hash and writes it, the new
// chain head and its index entries durably in one kv transaction. Record
// first, then act: a caller must check the error before performing the
// action the event records, and must not perform it when Append fails.
//
// Concurrent calls are group-committed: one of them writes every queued
// event in a single transaction (one fsync), in queue order. Once a call's
// event has been taken into a batch the write completes even if ctx is
// cancelled, so the error always tells whether the record exists.
func (r *Recorder) Append(ctx context.Context, e Event) (Event, error) {
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	if err := e.validate(); err != nil {
		return Event{}, fmt.Errorf("append: %w", err)
	}
	req := &appendReq{ctx: ctx, e: e, size: encodedSize(&e), wake: make(chan struct{}, 1)}
	r.qmu.Lock()
	r.queue = append(r.queue, req)
	if r.leading {
		r.qmu.Unlock()
		<-req.wake
		if !req.lead {
			return req.out, req.err
		}
	} else {
		r.leading = true
		r.qmu.Unlock()
	}
	r.writeBatch()
	return req.out, req.err
}

// writeBatch writes the queue's head batch, which holds the calling
// request, then hands leadership to the next waiting request, if any.
func (r *Recorder) writeBatch() {
	r.qmu.Lock()
	n, size := 0, 0
	for n < len(r.queue) && n < r.opts.MaxBatch && (n == 0 || size+r.queue[n].size <= maxBatchBytes) {
		size += r.queue[n].size
		n++
	}
	batch := r.queue[:n:n]
	r.queue = append([]*appendReq(nil), r.queue[n:]...)
	r.qmu.Unlock()

	live := make([]*appendReq, 0, len(batch))
	for _, q := range batch {
		if err := q.ctx.Err(); err != nil {
			q.err = err
			continue
		}
		live = append(live, q)
	}
	if len(live) > 0 {
		outs := make([]Event, len(live))
		// The batch carries other callers' records; one caller's
		// cancellation must not fail theirs.
		ctx := context.WithoutCancel(batch[0].ctx)
		err := r.Update(ctx, func(txn kv.Txn) error {
			for i, q := range live {
				ev, err := r.AppendTxn(txn, q.e)
				if err != nil {
					return err
				}
				outs[i] = ev
			}
			return nil
		})
		for i, q := range live {
			if err != nil {
				q.err = fmt.Errorf("append %s: %w", q.e.Kind, err)
			} else {
				q.out = outs[i]
			}
		}
	}
	for _, q := range batch {
		q.wake <- struct{}{}
	}

	r.qmu.Lock()
	defer r.qmu.Unlock()
	if len(r.queue) == 0 {
		r.leading = false
		return
	}
	next := r.queue[0]
	next.lead = true
	next.wake <- struct{}{}
}

// Update runs fn in a kv transaction, as kv.DB.Update does, serialized
// with this Recorder's group commits and other Update calls. Transactions
// that call AppendTxn should run through Update: every append reads and
// writes the chain head, so under plain kv.DB.Update they conflict with
// every concurrent append and can exhaust kv's retries under load. fn must
// not call Append or Update (that deadlocks) and should be short, since
// appends wait for it.
func (r *Recorder) Update(ctx context.Context, fn func(kv.Txn) error) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.db.Update(ctx, fn)
}

// AppendTxn is Append inside the caller's transaction, so that the record
// and the action it records commit together or not at all: the record
// becomes visible only if txn commits, and the action cannot commit without
// it. It returns the event as written by this attempt; when the caller's
// transaction function re-runs after a conflict, the event returned by the
// last run is the one that committed.
//
// Run txn through Recorder.Update: under plain kv.DB.Update it conflicts
// with every concurrent append and is retried by kv.
func (r *Recorder) AppendTxn(txn kv.Txn, e Event) (Event, error) {
	if err := e.validate(); err != nil {
		return Event{}, fmt.Errorf("append: %w", err)
	}
	h, err := readHead(txn)
	if err != nil {
		return Event{}, err
	}
	e.Seq = h.Seq + 1
	e.Time = r.opts.Now().UTC()
	if e.Time.Before(h.Time) {
		// Time never runs backwards along the chain, whatever the clock does.
		e.Time = h.Time
	}
	e.PrevHash = h.Hash
	if len(e.Details) > 0 {
		d := make(map[string]string, len(e.Details)+2)
		for k, v := range e.Details {
			d[k] = v
		}
		e.Details = d
	}
	if err := bindManifest(txn, &e); err != nil {
		return Event{}, err
	}
	v := seal(&e)
	if err := txn.Set(eventKey(e.Seq), v); err != nil {
		return Event{}, fmt.Errorf("append %s: %w", e.Kind, err)
	}
	if err := txn.Set(keyHead, encodeHead(Head{Seq: e.Seq, Hash: e.Hash, Time: e.Time})); err != nil {
		return Event{}, fmt.Errorf("append %s: %w", e.Kind, err)
	}
	for _, f := range indexFields {
		if val := f.value(&e); val != "" {
			if err := txn.Set(indexKey(f, val, e.Seq), nil); err != nil {
				return Event{}, fmt.Errorf("append %s: %w", e.Kind, err)
			}
		}
	}
	return e, nil
}

// bindManifest records, in e's details, how many pages of the run's read
// manifest exist and their chain hash, so that the manifest up to that
// point is covered by the event chain.
func bindManifest(rd kv.Reader, e *Event) error {
	if e.ReadManifest == "" {
		return nil
	}
	delete(e.Details, DetailManifestPages)
	delete(e.Details, DetailManifestHash)
	run, ok := ManifestRun(e.ReadManifest)
	if !ok {
		return nil
	}
	s, err := readSummary(rd, run)
	if errors.Is(err, ErrNotFound) {
		s = ManifestSummary{}
	} else if err != nil {
		return err
	}
	if e.Details == nil {
		e.Details = make(map[string]string, 2)
	}
	e.Details[DetailManifestPages] = strconv.FormatUint(s.Pages, 10)
	e.Details[DetailManifestHash] = s.Hash.String()
	if n := encodedSize(e); n > MaxRecordSize {
		return fmt.Errorf("event %s: %d bytes with manifest binding, limit %d: %w", e.Kind, n, MaxRecordSize, ErrInvalid)
	}
	return nil
}

func readHead(rd kv.Reader) (Head, error) {
	v, err := rd.Get(keyHead)
	if errors.Is(err, kv.ErrNotFound) {
		return Head{}, nil
	}
	if err != nil {
		return Head{}, fmt.Errorf("read chain head: %w", err)
	}
	return decodeHead(v)
}

// Head returns the end of the chain; the zero Head when the log is empty.
func (r *Recorder) Head(ctx context.Context) (Head, error) {
	var h Head
	err := r.db.View(ctx, func(rd kv.Reader) error {
		var err error
		h, err = readHead(rd)
		return err
	})
	return h, err
}

// Get returns the record with sequence number seq, or ErrNoSuchRecord.
func (r *Recorder) Get(ctx context.Context, seq uint64) (Event, error) {
	var e Event
	err := r.db.View(ctx, func(rd kv.Reader) error {
		var err error
		e, err = getEvent(rd, seq)
		return err
	})
	return e, err
}

// getEvent reads and decodes one record; it does not check its hash.
func getEvent(rd kv.Reader, seq uint64) (Event, error) {
	v, err := rd.Get(eventKey(seq))
	if errors.Is(err, kv.ErrNotFound) {
		return Event{}, fmt.Errorf("seq %d: %w", seq, ErrNoSuchRecord)
	}
	if err != nil {
		return Event{}, fmt.Errorf("get record %d: %w", seq, err)
	}
	e, _, err := decodeRecord(v)
	if err != nil {
		return Event{}, fmt.Errorf("seq %d: %w", seq, err)
	}
	if e.Seq != seq {
		return Event{}, fmt.Errorf("key %d holds record %d: %w", seq, e.Seq, ErrCorrupt)
	}
	return e, nil
}

// CheckAnchor checks that the record at a.Seq still exists, still hashes
// to its stored hash, and that hash is a.Hash. Together with Verify (which
// checks that every later record links back to it) this detects a
// rewritten tail that Verify alone cannot: a chain recomputed from scratch
// is self-consistent but no longer matches a Head published elsewhere.
// It returns an error wrapping ErrTampered when the anchor does not hold.
func (r *Recorder) CheckAnchor(ctx context.Context, a Head) error {
	if a.Seq == 0 {
		return nil
	}
	return r.db.View(ctx, func(rd kv.Reader) error {
		v, err := rd.Get(eventKey(a.Seq))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("anchor %d: record missing: %w", a.Seq, ErrTampered)
		}
		if err != nil {
			return fmt.Errorf("check anchor %d: %w", a.Seq, err)
		}
		e, body, err := decodeRecord(v)
		if err != nil {
			return fmt.Errorf("anchor %d: %w: %w", a.Seq, err, ErrTampered)
		}
		if e.Seq != a.Seq || Hash(sha256.Sum256(body)) != e.Hash || e.Hash != a.Hash {
			return fmt.Errorf("anchor %d: stored record hashes to %s, anchor says %s: %w",
				a.Seq, Hash(sha256.Sum256(body)), a.Hash, ErrTampered)
		}
		return nil
	})
}
