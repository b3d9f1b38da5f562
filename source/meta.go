package source

import (
	"context"
	"errors"
	"strings"

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
// source once. It leaves e as it is when the source cannot say (it is
// down, or no longer holds the pinned version as its current one): the
// read goes on with what the listing knew. User metadata in the
// gateway's own names (nas-*) is never taken from a source.
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
		if rec, err = m.askMeta(ctx, e); err != nil || rec == nil {
			return
		}
		_ = m.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(key, rec.Encode()) })
	}
	if rec.ContentType != "" {
		e.ContentType = rec.ContentType
	}
	e.Meta = rec.Meta
}

// askMeta asks e's source for the metadata of the pinned object (nil
// when it is not the source's current version any more).
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
		return nil, nil
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
