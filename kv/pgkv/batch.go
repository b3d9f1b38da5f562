package pgkv

import (
	"context"
	"fmt"
	"slices"

	"github.com/agentnas/nas/kv"
)

// A Flush writes chunks of at most chunkKeys keys and about chunkBytes,
// each in a transaction of its own.
const (
	chunkKeys  = 1000
	chunkBytes = 16 << 20
)

// batch collects writes, keeping only the last one of each key (the end
// state of the writes in order is the same, and one statement may touch a
// key once).
type batch struct {
	ctx context.Context
	db  *DB
	ops map[string]batchOp
}

type batchOp struct {
	value []byte
	del   bool
}

var _ kv.Batch = (*batch)(nil)

// Set implements kv.Batch.
func (b *batch) Set(key, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	b.ops[string(key)] = batchOp{value: append([]byte{}, value...)}
	return nil
}

// Delete implements kv.Batch.
func (b *batch) Delete(key []byte) error {
	b.ops[string(key)] = batchOp{del: true}
	return nil
}

// Cancel implements kv.Batch.
func (b *batch) Cancel() { clear(b.ops) }

// Flush implements kv.Batch: every write is committed (durable) when it
// returns nil. On an error the writes not yet committed stay in the batch,
// so Flush may be called again.
func (b *batch) Flush() error {
	keys := make([]string, 0, len(b.ops))
	for k := range b.ops {
		keys = append(keys, k)
	}
	// Sorted keys: concurrent flushes lock rows in one order.
	slices.Sort(keys)
	for len(keys) > 0 {
		n, size := 0, 0
		for n < len(keys) && n < chunkKeys && (n == 0 || size < chunkBytes) {
			size += len(keys[n]) + len(b.ops[keys[n]].value)
			n++
		}
		if err := b.flushChunk(keys[:n]); err != nil {
			return err
		}
		for _, k := range keys[:n] {
			delete(b.ops, k)
		}
		keys = keys[n:]
	}
	return nil
}

// flushChunk commits the writes of keys in one transaction, retrying on
// deadlocks and serialization failures.
func (b *batch) flushChunk(keys []string) error {
	var setK, setV, delK [][]byte
	for _, k := range keys {
		op := b.ops[k]
		if op.del {
			delK = append(delK, nonNil([]byte(k)))
		} else {
			setK, setV = append(setK, nonNil([]byte(k))), append(setV, nonNil(op.value))
		}
	}
	for i := 0; ; i++ {
		if err := b.ctx.Err(); err != nil {
			return err
		}
		err := b.write(setK, setV, delK)
		if !retryable(err) || i >= kv.MinRetries {
			return err
		}
		if err := kv.Backoff(b.ctx, i); err != nil {
			return err
		}
	}
}

func (b *batch) write(setK, setV, delK [][]byte) error {
	tx, err := b.db.pool.Begin(b.ctx)
	if err != nil {
		return fmt.Errorf("pgkv batch: %w", classify(err))
	}
	defer tx.Rollback(context.WithoutCancel(b.ctx))
	if len(setK) > 0 {
		if _, err := tx.Exec(b.ctx, b.db.q.batchSet, setK, setV); err != nil {
			return fmt.Errorf("pgkv batch set: %w", classify(err))
		}
	}
	if len(delK) > 0 {
		if _, err := tx.Exec(b.ctx, b.db.q.batchDel, delK); err != nil {
			return fmt.Errorf("pgkv batch delete: %w", classify(err))
		}
	}
	if err := tx.Commit(b.ctx); err != nil {
		return fmt.Errorf("pgkv batch commit: %w", classify(err))
	}
	return nil
}
