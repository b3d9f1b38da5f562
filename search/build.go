package search

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// Document kinds, the stored field "kind".
const (
	kindText = "text"
	kindSkip = "skip"
)

// A batch is written when it holds this many documents or body bytes.
const (
	batchDocs  = 512
	batchBytes = 16 << 20
	listPage   = 1000
)

// complete returns the stats of c if x covers it.
func (x *index) complete(c manifest.CommitID) (commitStats, bool) {
	x.stmu.Lock()
	defer x.stmu.Unlock()
	return x.st.find(c.String())
}

// latest is the newest complete commit, if any.
func (x *index) latest() (commitStats, bool) {
	x.stmu.Lock()
	defer x.stmu.Unlock()
	if len(x.st.Commits) == 0 {
		return commitStats{}, false
	}
	return x.st.Commits[len(x.st.Commits)-1], true
}

// ensure brings x to commit c: one build at a time, and a caller that
// waited for a build of c gets its answer.
func (x *index) ensure(ctx context.Context, b *branch.Service, br string, c manifest.CommitID) (Info, error) {
	if cs, ok := x.complete(c); ok {
		return cs.info(x.repo, x.st.Recipe), nil
	}
	select {
	case x.build <- struct{}{}:
	case <-ctx.Done():
		return Info{}, ctx.Err()
	}
	defer func() { <-x.build }()
	if cs, ok := x.complete(c); ok {
		return cs.info(x.repo, x.st.Recipe), nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.idx == nil {
		return Info{}, errStale
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(x.life, cancel)()
	start := time.Now()
	cs, err := x.bring(ctx, b, br, c)
	if err != nil {
		return Info{}, fmt.Errorf("index %s at %s: %w", x.repo, c, err)
	}
	cs.Commit, cs.BuiltAt, cs.BuildSecs = c.String(), start.UTC(), time.Since(start).Seconds()
	x.stmu.Lock()
	defer x.stmu.Unlock()
	x.st.add(cs)
	return cs.info(x.repo, x.st.Recipe), x.st.save(x.dir)
}

// bring indexes what c has that x lacks: the difference from the
// newest complete commit, or c's whole tree when there is none (or it
// was collected).
func (x *index) bring(ctx context.Context, b *branch.Service, br string, c manifest.CommitID) (commitStats, error) {
	bl := &builder{ctx: ctx, x: x, b: b, batch: x.idx.NewBatch()}
	if from, ok := x.latest(); ok {
		bl.st = from
		err := b.Diff(ctx, x.repo, from.Commit, c.String(), "", nil, bl.change)
		if err == nil || !errors.Is(err, branch.ErrNotFound) && !errors.Is(err, manifest.ErrNoSuchCommit) {
			return bl.st, errors.Join(err, bl.flush())
		}
		bl.st = commitStats{}
	}
	n, err := x.idx.DocCount()
	if err != nil {
		return bl.st, err
	}
	bl.fresh = n == 0
	for after := ""; ; {
		res, err := b.List(ctx, x.repo, br, branch.ListOptions{After: after, MaxKeys: listPage, At: c})
		if err != nil {
			return bl.st, err
		}
		for _, o := range res.Objects {
			if err := bl.add(o.Key, o.Entry); err != nil {
				return bl.st, err
			}
		}
		if !res.Truncated {
			return bl.st, bl.flush()
		}
		after = res.Next
	}
}

// builder indexes the entries of one commit in batches and counts them.
type builder struct {
	ctx   context.Context
	x     *index
	b     *branch.Service
	fresh bool // the index was empty: no document need be looked up
	batch *bleve.Batch
	bytes int // body bytes in batch
	st    commitStats
}

// change applies one difference from the complete commit.
func (bl *builder) change(ch branch.Change) error {
	if ch.Old != nil {
		if err := bl.remove(ch.Key, ch.Old); err != nil {
			return err
		}
	}
	if ch.New != nil {
		return bl.add(ch.Key, ch.New)
	}
	return nil
}

// add gives entry e of key a document unless it has one, and counts it.
func (bl *builder) add(key string, e *manifest.Entry) error {
	if err := bl.ctx.Err(); err != nil {
		return err
	}
	id, ok := docID(key, e)
	if !ok {
		bl.count(kindSkip, e.Size, 1)
		return nil
	}
	if !bl.fresh {
		kind, found, err := bl.x.kind(id)
		if err != nil || found {
			bl.count(kind, e.Size, 1)
			return err
		}
	}
	data, err := readEntry(bl.ctx, bl.b, e)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	doc := map[string]any{"kind": kindSkip}
	if isText(data) {
		doc = map[string]any{"kind": kindText, "key": key, "dirs": dirs(key), "body": string(data), "quarantine": Quarantined(key)}
		bl.bytes += len(data)
	}
	if err := bl.batch.Index(id, doc); err != nil {
		return err
	}
	bl.count(doc["kind"].(string), e.Size, 1)
	if bl.batch.Size() >= batchDocs || bl.bytes >= batchBytes {
		return bl.flush()
	}
	return nil
}

// remove uncounts entry e of key, which the complete commit held.
func (bl *builder) remove(key string, e *manifest.Entry) error {
	id, ok := docID(key, e)
	if !ok {
		bl.count(kindSkip, e.Size, -1)
		return nil
	}
	kind, _, err := bl.x.kind(id)
	bl.count(kind, e.Size, -1)
	return err
}

func (bl *builder) count(kind string, size int64, n int) {
	if kind == kindText {
		bl.st.Files += n
		bl.st.Bytes += int64(n) * size
		return
	}
	bl.st.Skipped += n
}

// flush writes the batch.
func (bl *builder) flush() error {
	if bl.batch.Size() == 0 {
		return nil
	}
	err := bl.x.idx.Batch(bl.batch)
	bl.batch.Reset()
	bl.bytes = 0
	return err
}

// kind returns the kind of document id, if x has it.
func (x *index) kind(id string) (kind string, found bool, err error) {
	d, err := x.idx.Document(id)
	if err != nil || d == nil {
		return "", false, err
	}
	kind = kindSkip
	d.VisitFields(func(f bindex.Field) {
		if f.Name() == "kind" {
			kind = string(f.Value())
		}
	})
	return kind, true, nil
}

// docID is the document ID of key's entry e: its content identity and
// the key. ok is false for entries never read (lazy, or larger than
// MaxFileBytes).
func docID(key string, e *manifest.Entry) (string, bool) {
	ident, ok := identity(e)
	if !ok || e.Size > MaxFileBytes {
		return "", false
	}
	return ident + ":" + key, true
}

// identity names an entry's content without reading it: the SHA-256 of
// its chunk list (hash and size of each chunk), or of its content
// reference. ok is false for a lazy entry, whose content is remote, and
// for a sensitive one: the index would keep its words outside the key
// that forgetting destroys, so it is never indexed.
func identity(e *manifest.Entry) (string, bool) {
	if e.Lazy() || e.Retention == manifest.RetentionSensitive {
		return "", false
	}
	h := sha256.New()
	if e.Content != nil {
		h.Write([]byte{'c'})
		var n [4]byte
		for _, r := range e.Content.Chunks {
			h.Write(r.Hash[:])
			binary.LittleEndian.PutUint32(n[:], r.Size)
			h.Write(n[:])
		}
	} else {
		h.Write([]byte{'r'})
		h.Write(e.ContentRef[:])
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// splitID is docID's inverse.
func splitID(id string) (ident, key string, ok bool) {
	ident, key, ok = strings.Cut(id, ":")
	return ident, key, ok && len(ident) == 2*sha256.Size
}

// readEntry reads e's bytes whole (it is at most MaxFileBytes).
func readEntry(ctx context.Context, b *branch.Service, e *manifest.Entry) ([]byte, error) {
	c, err := b.Manifest().Content(ctx, e)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(e.Size))
	if err := b.ReadContent(ctx, &buf, c, 0, e.Size); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// isText reports whether data is indexed as text: UTF-8 without NUL.
func isText(data []byte) bool {
	return bytes.IndexByte(data, 0) < 0 && utf8.Valid(data)
}

// dirs lists the prefixes of key that end in "/": "a/", "a/b/" of
// "a/b/c".
func dirs(key string) []string {
	var out []string
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			out = append(out, key[:i+1])
		}
	}
	return out
}

// Quarantined reports whether key is a quarantined note: it has a
// memory/quarantine/ segment.
func Quarantined(key string) bool {
	return strings.HasPrefix(key, "memory/quarantine/") || strings.Contains(key, "/memory/quarantine/")
}
