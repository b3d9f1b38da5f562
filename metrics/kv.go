package metrics

import (
	"context"
	"time"

	"github.com/agentnas/nas/kv"
)

// db is a kv.DB that times every transaction and batch flush.
type db struct {
	kv.DB
	m *Metrics
}

var _ kv.DB = db{}

// WrapDB returns d with its View, Update and Batch flushes timed.
func (m *Metrics) WrapDB(d kv.DB) kv.DB { return db{DB: d, m: m} }

func (m *Metrics) kv(op string, start time.Time, err error) {
	m.kvDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.kvErrors.WithLabelValues(op).Inc()
	}
}

// View implements kv.DB.
func (d db) View(ctx context.Context, fn func(kv.Reader) error) error {
	start := time.Now()
	err := d.DB.View(ctx, fn)
	d.m.kv("view", start, err)
	return err
}

// Update implements kv.DB.
func (d db) Update(ctx context.Context, fn func(kv.Txn) error) error {
	start := time.Now()
	err := d.DB.Update(ctx, fn)
	d.m.kv("update", start, err)
	return err
}

// Batch implements kv.DB: the batch's Flush is timed.
func (d db) Batch(ctx context.Context) kv.Batch { return batch{Batch: d.DB.Batch(ctx), m: d.m} }

type batch struct {
	kv.Batch
	m *Metrics
}

// Flush implements kv.Batch.
func (b batch) Flush() error {
	start := time.Now()
	err := b.Batch.Flush()
	b.m.kv("batch_flush", start, err)
	return err
}
