package pgkv

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/kv"
	"github.com/jackc/pgx/v5"
)

// Scan pages: at most pageRows rows, and a page stops growing once it holds
// pageBytes (the rest of the rows fetched are dropped and read again on the
// next page, whose limit is then cut to what fitted).
const (
	pageRows  = 512
	pageBytes = 8 << 20
)

// A Txn's writes are queued and sent together (one round trip, a pipeline)
// before its next read and before its commit, or once pipeOps statements
// or pipeBytes of them are waiting.
const (
	pipeOps   = 256
	pipeBytes = 4 << 20
)

// queries are the engine's statements on one schema.
type queries struct {
	get, set, del              string
	fwd, fwdOpen, rev, revOpen string
	batchSet, batchDel         string
}

func newQueries(schema string) queries {
	t := pgx.Identifier{schema, "kv"}.Sanitize()
	return queries{
		get:      "SELECT v FROM " + t + " WHERE k = $1",
		set:      "INSERT INTO " + t + " (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		del:      "DELETE FROM " + t + " WHERE k = $1",
		fwd:      "SELECT k, v FROM " + t + " WHERE k >= $1 AND k < $2 ORDER BY k LIMIT $3",
		fwdOpen:  "SELECT k, v FROM " + t + " WHERE k >= $1 ORDER BY k LIMIT $2",
		rev:      "SELECT k, v FROM " + t + " WHERE k >= $1 AND k < $2 ORDER BY k DESC LIMIT $3",
		revOpen:  "SELECT k, v FROM " + t + " WHERE k >= $1 ORDER BY k DESC LIMIT $2",
		batchSet: "INSERT INTO " + t + " (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[]) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v",
		batchDel: "DELETE FROM " + t + " WHERE k = ANY($1::bytea[])",
	}
}

// txn is a View's Reader or an Update's Txn. Statements run on the
// transaction's one connection in the caller's context.
type txn struct {
	ctx     context.Context
	tx      pgx.Tx
	db      *DB
	written int64
	err     error // the first statement that failed: the transaction is aborted

	pending      pgx.Batch // writes not sent yet
	pendingBytes int
}

// fail records err (the transaction is aborted after a failed statement)
// and returns it wrapped.
func (t *txn) fail(op string, err error) error {
	err = fmt.Errorf("pgkv %s: %w", op, classify(err))
	if t.err == nil {
		t.err = err
	}
	return err
}

func (t *txn) aborted() error {
	if t.err != nil {
		return fmt.Errorf("%w: %w", errAborted, t.err)
	}
	return nil
}

// queue adds a write of n bytes to the pipeline, sending it when full.
// The arguments must be the txn's own copies.
func (t *txn) queue(n int, sql string, args ...any) error {
	t.pending.Queue(sql, args...)
	t.pendingBytes += n
	if t.pending.Len() >= pipeOps || t.pendingBytes >= pipeBytes {
		return t.flush()
	}
	return nil
}

// flush sends the queued writes and waits for their results; a failure
// aborts the transaction.
func (t *txn) flush() error {
	if err := t.aborted(); err != nil {
		return err
	}
	n := t.pending.Len()
	if n == 0 {
		return nil
	}
	b := t.pending
	t.pending, t.pendingBytes = pgx.Batch{}, 0
	br := t.tx.SendBatch(t.ctx, &b)
	for range n {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return t.fail("write", err)
		}
	}
	if err := br.Close(); err != nil {
		return t.fail("write", err)
	}
	return nil
}

// Get implements kv.Reader.
func (t *txn) Get(key []byte) ([]byte, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	var v []byte
	err := t.tx.QueryRow(t.ctx, t.db.q.get, nonNil(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, t.fail("get", err)
	}
	return nonNil(v), nil
}

// Set implements kv.Txn.
func (t *txn) Set(key, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := t.grow(len(key) + len(value)); err != nil {
		return err
	}
	return t.queue(len(key)+len(value), t.db.q.set, append([]byte{}, key...), append([]byte{}, value...))
}

// Delete implements kv.Txn.
func (t *txn) Delete(key []byte) error {
	if err := t.grow(len(key)); err != nil {
		return err
	}
	return t.queue(len(key), t.db.q.del, append([]byte{}, key...))
}

// grow accounts n more bytes of writes against MaxTxnBytes.
func (t *txn) grow(n int) error {
	if err := t.aborted(); err != nil {
		return err
	}
	t.written += int64(n)
	if t.written > t.db.maxTxn {
		err := fmt.Errorf("pgkv: %w: more than %d bytes of writes in one transaction", kv.ErrTooBig, t.db.maxTxn)
		if t.err == nil {
			t.err = err
		}
		return err
	}
	return nil
}

// row is one key and value of a page.
type row struct{ k, v []byte }

// Scan implements kv.Reader. It reads the range page by page; the rows of
// a page are fetched before fn runs, so fn may use the transaction.
func (t *txn) Scan(r kv.Range, fn func(key, value []byte) error) error {
	if err := t.flush(); err != nil {
		return err
	}
	lo, hi := nonNil(r.Start), r.End
	limit := pageRows
	for {
		page, more, byBytes, err := t.page(lo, hi, r.Reverse, limit)
		if err != nil {
			return err
		}
		for _, p := range page {
			if err := fn(p.k, p.v); err != nil {
				if errors.Is(err, kv.ErrStop) {
					return nil
				}
				return err
			}
		}
		if !more || len(page) == 0 {
			return nil
		}
		last := page[len(page)-1].k
		if r.Reverse {
			hi = last // keys below the last one seen
		} else {
			lo = append(last[:len(last):len(last)], 0) // the next key in byte order
		}
		// A page cut short by its size sets the next page's rows (large
		// values); otherwise the limit grows back.
		if byBytes {
			limit = len(page)
		} else {
			limit = min(2*limit, pageRows)
		}
	}
}

// page fetches up to limit rows of [lo, hi) (hi nil: unbounded) in order,
// stopping early at pageBytes; more reports that the range may hold more,
// byBytes that the page stopped at pageBytes.
func (t *txn) page(lo, hi []byte, reverse bool, limit int) (page []row, more, byBytes bool, err error) {
	q, args := t.db.q.fwdOpen, []any{lo, limit}
	switch {
	case reverse && hi == nil:
		q = t.db.q.revOpen
	case reverse:
		q, args = t.db.q.rev, []any{lo, hi, limit}
	case hi != nil:
		q, args = t.db.q.fwd, []any{lo, hi, limit}
	}
	rows, err := t.tx.Query(t.ctx, q, args...)
	if err != nil {
		return nil, false, false, t.fail("scan", err)
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var p row
		if err := rows.Scan(&p.k, &p.v); err != nil {
			return nil, false, false, t.fail("scan", err)
		}
		p.v = nonNil(p.v)
		page = append(page, p)
		if size += len(p.k) + len(p.v); size >= pageBytes {
			rows.Close()
			return page, true, true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, false, t.fail("scan", err)
	}
	return page, len(page) == limit, false, nil
}

// checkKey refuses a key the primary key's index could not hold.
func checkKey(key []byte) error {
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrKeyTooLong, len(key), MaxKeySize)
	}
	return nil
}

// nonNil turns a nil slice into an empty one: pgx sends nil as NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
