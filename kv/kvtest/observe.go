// Package kvtest holds test support for kv: TestDB, the conformance suite
// every engine of kv.DB must pass, and a decorator that reports every
// committed write, for tests of durability and ordering. Nothing in the
// product links it.
package kvtest

import (
	"context"

	"github.com/agentnas/nas/kv"
)

// Write is one key written (or deleted) by a committed transaction.
type Write struct {
	Key, Value []byte
	Delete     bool
}

// Observe wraps db so that onCommit is called with the writes of every
// Update and Batch flush, after they are durable and before the call
// returns. It is a decorator for tracing and tests; the writes passed to
// onCommit belong to it.
func Observe(db kv.DB, onCommit func(writes []Write)) kv.DB {
	return &observed{DB: db, onCommit: onCommit}
}

type observed struct {
	kv.DB
	onCommit func(writes []Write)
}

func (o *observed) Update(ctx context.Context, fn func(kv.Txn) error) error {
	var keys []Write
	err := o.DB.Update(ctx, func(txn kv.Txn) error {
		keys = keys[:0] // a retried transaction writes afresh
		return fn(&recordingTxn{Txn: txn, keys: &keys})
	})
	if err == nil && len(keys) > 0 {
		o.onCommit(keys)
	}
	return err
}

func (o *observed) Batch(ctx context.Context) kv.Batch {
	return &recordingBatch{Batch: o.DB.Batch(ctx), onCommit: o.onCommit}
}

type recordingTxn struct {
	kv.Txn
	keys *[]Write
}

func (t *recordingTxn) Set(key, value []byte) error {
	*t.keys = append(*t.keys, Write{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...)})
	return t.Txn.Set(key, value)
}

func (t *recordingTxn) Delete(key []byte) error {
	*t.keys = append(*t.keys, Write{Key: append([]byte(nil), key...), Delete: true})
	return t.Txn.Delete(key)
}

type recordingBatch struct {
	kv.Batch
	keys     []Write
	onCommit func(writes []Write)
}

func (b *recordingBatch) Set(key, value []byte) error {
	b.keys = append(b.keys, Write{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...)})
	return b.Batch.Set(key, value)
}

func (b *recordingBatch) Delete(key []byte) error {
	b.keys = append(b.keys, Write{Key: append([]byte(nil), key...), Delete: true})
	return b.Batch.Delete(key)
}

func (b *recordingBatch) Flush() error {
	err := b.Batch.Flush()
	if err == nil && len(b.keys) > 0 {
		b.onCommit(b.keys)
	}
	b.keys = nil
	return err
}
