package source

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Metadata of lazy entries attached without it. An attach without
// with_metadata lists objects only, so their entries say
// binary/octet-stream and carry no user metadata; the first HEAD or GET
// of one asks the source (a Stat: an S3 HEAD) and keeps the answer in the
// side index, beside the object's blocks and evicted with them, so every
// later one, on any branch or fork, is answered from there.

// metaBlock is the side-index "block" number of a pinned object's
// metadata record: no object has that many blocks (32 PiB), so reads,
// counts and GC roots pass it by.
const metaBlock = 1<<32 - 1

// defaultContentType is what an entry listed without metadata says.
const defaultContentType = "binary/octet-stream"

// FillMeta gives lazy entry e, listed without metadata, the content type
// and user metadata its source gives the pinned object, asking the
// source once. A source that no longer holds the pinned version as its
// current one cannot say: that is kept as the listing's defaults, so it
// is not asked again. One that fails (it is down) is not asked again for
// MaterializerOptions.MetaRetry, so reads of local objects do not wait on a dead remote each
// time. Either way the read goes on with what the listing knew. User
// metadata in the gateway's own names (nas-*) is never taken from a
// source.
func (m *Materializer) FillMeta(ctx context.Context, e *manifest.Entry) {
	if !e.Lazy() || e.ContentType != defaultContentType || len(e.Meta) > 0 {
		return
	}
	key := refOf(e.Remote).blockKey(metaBlock)
	var rec *manifest.Entry
	err := m.db.View(ctx, func(rd kv.Reader) error {
		v, err := rd.Get(key)
		if err != nil {
			return err
		}
		rec, err = manifest.DecodeEntry(v)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) || (err != nil && rec == nil) {
		if !m.metaDue(string(key)) {
			return
		}
		if rec, err = m.askMeta(ctx, e); err != nil {
			m.metaFailed(string(key))
			return
		}
		_ = m.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(key, rec.Encode()) })
	}
	if rec.ContentType != "" {
		e.ContentType = rec.ContentType
	}
	e.Meta = rec.Meta
}

// askMeta asks e's source for the metadata of the pinned object (the
// listing's defaults when it is not the source's current version).
func (m *Materializer) askMeta(ctx context.Context, e *manifest.Entry) (*manifest.Entry, error) {
	src, err := m.open.Source(ctx, e.Remote.Source)
	if err != nil {
		return nil, err
	}
	o, err := src.Stat(ctx, e.Remote.Key)
	if err != nil {
		return nil, err
	}
	if o.ETag != e.Remote.ETag || (e.Remote.VersionID != "" && o.VersionID != e.Remote.VersionID) {
		return &manifest.Entry{ContentType: defaultContentType}, nil // not the pinned version's: unknown for good
	}
	return &manifest.Entry{ContentType: o.ContentType, Meta: foreignMeta(o.Meta)}, nil
}

// foreignMeta is a source's user metadata without the names the gateway
// answers itself (nas-*: labels, retention), which a source may not set.
func foreignMeta(meta []manifest.Pair) []manifest.Pair {
	var out []manifest.Pair
	for _, p := range meta {
		if !strings.HasPrefix(p.Name, "nas-") {
			out = append(out, p)
		}
	}
	return out
}

// metaMisses bounds the objects remembered as failed (beyond it they are
// forgotten, and asked again).
const metaMisses = 10000

// metaDue reports whether the metadata record key may be asked for now.
func (m *Materializer) metaDue(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return time.Now().After(m.metaMiss[key])
}

// metaFailed remembers that asking for key failed.
func (m *Materializer) metaFailed(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.metaMiss == nil || len(m.metaMiss) >= metaMisses {
		m.metaMiss = map[string]time.Time{}
	}
	m.metaMiss[key] = time.Now().Add(m.metaRetry)
}
