package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger is the embedded DB backed by Badger, durable on commit (its own
// writes are asynchronous; the group-commit syncer makes them durable).
//
// It runs Badger in managed mode and hands out timestamps itself, so that
// readers never wait for a writer's fsync: a reader's snapshot is the
// highest commit timestamp below which every commit is durable (the commit
// watermark), so reads see only durable data and never block, while
// concurrent writers still share fsyncs through Badger's write batching.
// (In Badger's own mode every new transaction waits until all commits in
// flight are written and synced, which serializes reads behind writes.)
type Badger struct {
	db     *badger.DB
	closer *z.Closer
	syncer *syncer // nil in memory
	pager  *pager  // nil in memory, or when mapped pages are the kernel's to manage

	mu      sync.Mutex   // guards next and the order of Begin calls on the marks
	next    uint64       // next commit timestamp
	discard uint64       // discard timestamp last given to Badger
	commits *y.WaterMark // commit timestamps handed out; DoneUntil is durable
	reads   *y.WaterMark // read timestamps in use; bounds the discard timestamp
}

var _ DB = (*Badger)(nil)

// BadgerOptions tunes the embedded store; the zero value is the default.
type BadgerOptions struct {
	// InMemory keeps everything in memory (tests of pure logic only).
	InMemory bool
	// Logger receives Badger's warnings and errors; nil discards them.
	Logger *slog.Logger
	// Sizing bounds Badger's own memory; its zero fields take the values
	// of BadgerSizingFor(DefaultBadgerMemory).
	Sizing BadgerSizing
}

// OpenBadger opens (creating if needed) a Badger store in dir.
func OpenBadger(dir string, o BadgerOptions) (*Badger, error) {
	sz := o.Sizing.withDefaults()
	if err := sz.check(); err != nil {
		return nil, fmt.Errorf("open badger %s: %w", dir, err)
	}
	opts := sz.apply(badger.DefaultOptions(dir)).
		// Durability comes from the group-commit syncer, see syncer.go.
		WithSyncWrites(false).
		WithLogger(badgerLogger{o.Logger}).
		WithNumVersionsToKeep(1).
		WithValueLogFileSize(256 << 20).
		// Every value below Badger's largest threshold, 1 MiB (all tree
		// nodes, inline chunks and content lists of objects below ~28
		// GiB), lives in the LSM, so a commit appends to one log and the
		// value log, whose garbage collection would delete rewritten data
		// before it is synced, stays all but unused. The threshold is
		// exclusive: a value of exactly 1 MiB goes to the value log, and in
		// memory mode, which has none, Badger panics on it (the kv suite's
		// LongKeysAndValues declares that gap).
		WithValueThreshold(valueThreshold).
		WithCompactL0OnClose(false)
	if o.InMemory {
		opts = opts.WithInMemory(true).WithDir("").WithValueDir("")
	}
	db, err := badger.OpenManaged(opts)
	if err != nil {
		return nil, fmt.Errorf("open badger %s: %w", dir, err)
	}
	b := &Badger{db: db, closer: z.NewCloser(2),
		commits: &y.WaterMark{Name: "kv.commits"}, reads: &y.WaterMark{Name: "kv.reads"}}
	if !o.InMemory {
		b.syncer = newSyncer(dir)
		b.pager = startPager(dir, sz.MappedResident, o.Logger)
	}
	b.commits.Init(b.closer)
	b.reads.Init(b.closer)
	last := db.MaxVersion()
	b.commits.SetDoneUntil(last)
	b.reads.SetDoneUntil(last)
	b.next = last + 1
	return b, nil
}

// beginRead returns a snapshot timestamp and registers it as in use.
func (b *Badger) beginRead() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := b.commits.DoneUntil()
	b.reads.Begin(ts)
	return ts
}

// endRead releases a snapshot and lets compaction and conflict tracking
// forget what no snapshot can see any more. The discard timestamp only
// ever rises (Badger asserts it).
func (b *Badger) endRead(ts uint64) {
	b.reads.Done(ts)
	d := b.reads.DoneUntil()
	b.mu.Lock()
	defer b.mu.Unlock()
	if d > b.discard {
		b.discard = d
		b.db.SetDiscardTs(d)
	}
}

// sync makes every write completed so far durable; vlog says the
// caller's write put a value in the value log.
func (b *Badger) sync(vlog bool) error {
	if b.syncer == nil {
		return nil
	}
	return b.syncer.wait(vlog)
}

// inValueLog reports whether Badger keeps a value of n bytes in the value
// log rather than in the LSM (whose write-ahead log every round syncs).
func inValueLog(n int) bool { return n >= valueThreshold }

// beginCommit hands out the next commit timestamp.
func (b *Badger) beginCommit() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts := b.next
	b.next++
	b.commits.Begin(ts)
	return ts
}

// Close flushes and closes the store.
func (b *Badger) Close() error {
	b.closer.SignalAndWait()
	b.pager.close()
	if b.syncer != nil {
		defer b.syncer.close()
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("close badger: %w", err)
	}
	return nil
}

// Run performs background maintenance until ctx ends. Badger compacts
// its LSM on its own; value-log garbage collection is deliberately never
// run (see the value threshold in OpenBadger), so there is nothing else to
// do yet.
func (b *Badger) Run(ctx context.Context) {
	<-ctx.Done()
}

// View implements DB.
func (b *Badger) View(ctx context.Context, fn func(Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ts := b.beginRead()
	defer b.endRead(ts)
	txn := b.db.NewTransactionAt(ts, false)
	defer txn.Discard()
	return fn(badgerTxn{txn: txn})
}

// Update implements DB.
func (b *Badger) Update(ctx context.Context, fn func(Txn) error) error {
	start := time.Now()
	for i := 0; i < MinRetries || time.Since(start) < RetryFor; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := b.update(fn)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, badger.ErrConflict):
			// The winner may still be syncing; retry on a snapshot that
			// includes every commit handed out so far, or the retry would
			// read the same stale value and conflict again.
			b.mu.Lock()
			last := b.next - 1
			b.mu.Unlock()
			if err := b.commits.WaitForMark(ctx, last); err != nil {
				return err
			}
			if err := Backoff(ctx, i); err != nil {
				return err
			}
			continue
		case errors.Is(err, badger.ErrTxnTooBig):
			return fmt.Errorf("%w: %w", ErrTooBig, err)
		default:
			return err
		}
	}
	return ErrConflict
}

func (b *Badger) update(fn func(Txn) error) error {
	rts := b.beginRead()
	defer b.endRead(rts)
	txn := b.db.NewTransactionAt(rts, true)
	defer txn.Discard()
	t := badgerTxn{txn: txn, vlog: new(bool)}
	if err := fn(t); err != nil {
		return err
	}
	cts := b.beginCommit()
	err := txn.CommitAt(cts, nil)
	if err == nil {
		err = b.sync(*t.vlog)
	}
	// Only now may snapshots include the commit: reads see durable data.
	b.commits.Done(cts)
	if err != nil {
		return err
	}
	// Read-after-write: the caller's next snapshot must include this commit,
	// so wait until the watermark (updated asynchronously) passes it.
	return b.commits.WaitForMark(context.Background(), cts)
}

// Batch implements DB.
func (b *Badger) Batch(ctx context.Context) Batch {
	return &badgerBatch{b: b}
}

type badgerTxn struct {
	txn  *badger.Txn
	vlog *bool // a value set went to the value log (nil: a read)
}

func (t badgerTxn) Get(key []byte) ([]byte, error) {
	item, err := t.txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("kv get: %w", err)
	}
	return item.ValueCopy(nil)
}

func (t badgerTxn) Set(key, value []byte) error {
	// Badger keeps the slices until commit; callers may reuse theirs.
	k := append([]byte(nil), key...)
	v := append([]byte(nil), value...)
	if inValueLog(len(v)) && t.vlog != nil {
		*t.vlog = true
	}
	if err := t.txn.Set(k, v); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return fmt.Errorf("%w: %w", ErrTooBig, err)
		}
		return fmt.Errorf("kv set: %w", err)
	}
	return nil
}

func (t badgerTxn) Delete(key []byte) error {
	if err := t.txn.Delete(append([]byte(nil), key...)); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return fmt.Errorf("%w: %w", ErrTooBig, err)
		}
		return fmt.Errorf("kv delete: %w", err)
	}
	return nil
}

func (t badgerTxn) Scan(r Range, fn func(key, value []byte) error) error {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	opts.Reverse = r.Reverse
	if !r.Reverse {
		opts.Prefix = commonPrefix(r.Start, r.End)
	}
	it := t.txn.NewIterator(opts)
	defer it.Close()
	if r.Reverse {
		if r.End == nil {
			it.Rewind()
		} else {
			it.Seek(r.End)
			if it.Valid() && bytes.Equal(it.Item().Key(), r.End) {
				it.Next()
			}
		}
	} else {
		it.Seek(r.Start)
	}
	for ; it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if r.Reverse {
			if bytes.Compare(k, r.Start) < 0 {
				return nil
			}
		} else if r.End != nil && bytes.Compare(k, r.End) >= 0 {
			return nil
		}
		err := item.Value(func(v []byte) error { return fn(k, v) })
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// commonPrefix returns the longest common prefix of a and b, which lets
// Badger skip tables that cannot hold the range.
func commonPrefix(a, b []byte) []byte {
	if b == nil {
		return nil
	}
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

// badgerBatch buffers writes and commits them at Flush under one commit
// timestamp; taking the timestamp only then means a batch being filled never
// holds back the commit watermark (which would stall every other writer
// waiting for it).
type badgerBatch struct {
	b   *Badger
	ops []batchOp
}

type batchOp struct {
	key, value []byte
	del        bool
}

func (w *badgerBatch) Set(key, value []byte) error {
	w.ops = append(w.ops, batchOp{key: append([]byte(nil), key...), value: append([]byte(nil), value...)})
	return nil
}

func (w *badgerBatch) Delete(key []byte) error {
	w.ops = append(w.ops, batchOp{key: append([]byte(nil), key...), del: true})
	return nil
}

func (w *badgerBatch) Flush() error {
	ops := w.ops
	w.ops = nil
	if len(ops) == 0 {
		return nil
	}
	ts := w.b.beginCommit()
	wb := w.b.db.NewWriteBatchAt(ts)
	vlog := false
	err := func() error {
		for _, op := range ops {
			var err error
			vlog = vlog || inValueLog(len(op.value))
			if op.del {
				err = wb.Delete(op.key)
			} else {
				err = wb.Set(op.key, op.value)
			}
			if err != nil {
				wb.Cancel()
				return err
			}
		}
		if err := wb.Flush(); err != nil {
			return err
		}
		return w.b.sync(vlog)
	}()
	w.b.commits.Done(ts)
	if err != nil {
		return fmt.Errorf("kv batch flush: %w", err)
	}
	return w.b.commits.WaitForMark(context.Background(), ts)
}

func (w *badgerBatch) Cancel() { w.ops = nil }

// badgerLogger forwards Badger's warnings and errors to slog and drops its
// chatty info and debug lines.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error("badger", "msg", fmt.Sprintf(f, a...))
	}
}

func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn("badger", "msg", fmt.Sprintf(f, a...))
	}
}

func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}
