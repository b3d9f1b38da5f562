package gitexport

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/tree"
)

// Load rebuilds a repository called name in svc from a dump stream and
// verifies it on the way: every chunk hashes to its reference, every
// content list to its hash, every entry's size to its chunks, every
// commit's rebuilt tree to the root it names and its fields to its ID.
// The repository appears only once the whole stream verified; on any
// error nothing of it is visible and what was written becomes garbage.
// Chunks are written with the exported boundaries, so the store holds
// exactly the exported chunks.
func Load(ctx context.Context, svc *branch.Service, name string, r io.Reader) (*apiv1.Report, error) {
	sr := newStreamReader(r)
	kind, payload, err := sr.next()
	if err != nil {
		return nil, err
	}
	if kind != recHeader {
		return nil, formatf("stream starts with record %q, not a header", kind)
	}
	var hd repoDoc
	if err := decodeStrict(payload, &hd); err != nil {
		return nil, err
	}
	if hd.Format != formatName || hd.Version != formatVersion {
		return nil, formatf("format %q version %d; this gateway reads %s version %d", hd.Format, hd.Version, formatName, formatVersion)
	}
	salt, err := base64.StdEncoding.DecodeString(hd.Salt)
	if err != nil || len(salt) == 0 {
		return nil, formatf("header: bad salt")
	}
	rs, err := svc.BeginRestore(ctx, name, branch.RestoreOptions{Salt: salt, DefaultBranch: hd.DefaultBranch, Created: hd.Created})
	if err != nil {
		return nil, err
	}
	l := &loader{svc: svc, rs: rs, t: rs.Tree(), sr: sr, rep: &apiv1.Report{Repo: name, Uncommitted: []apiv1.Uncommitted{}, Collected: []string{}}}
	defer l.closeUpload()
	if err := l.run(ctx); err != nil {
		if aerr := rs.Abort(ctx); aerr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", aerr))
		}
		return nil, fmt.Errorf("import %s: %w", name, err)
	}
	if _, err := rs.Publish(ctx); err != nil {
		return nil, fmt.Errorf("import %s: %w", name, err)
	}
	return l.rep, nil
}

type loader struct {
	svc *branch.Service
	rs  *branch.Restore
	t   *tree.Tree
	sr  *streamReader
	rep *apiv1.Report

	up      *cas.Upload // chunks written since the last flush
	upBytes int64
	upHas   map[chunk.Hash]struct{} // chunks put into up
	edits   []tree.Edit
	root    chunk.Hash // the commit being loaded, so far
}

// An Upload is synced and recorded once it holds uploadFlush bytes or
// uploadChunks chunks: small chunks live inside their index records, and
// all records go into one kv transaction, which must stay small.
const (
	uploadFlush  = 1 << 20
	uploadChunks = 256
)

// applyPage bounds the edits sorted and applied to the tree at a time;
// the tree's history independence makes the result the same as applying
// a commit's edits at once.
const applyPage = 4096

func (l *loader) run(ctx context.Context) error {
	var cur *pendingCommit
	for {
		kind, payload, err := l.sr.next()
		if err != nil {
			return err
		}
		switch kind {
		case recCommit:
			if cur != nil {
				return formatf("commit record inside commit %s", cur.id)
			}
			if cur, err = l.beginCommit(payload); err != nil {
				return err
			}
		case recEntry:
			if cur == nil {
				return formatf("entry record outside a commit")
			}
			if err := l.entry(ctx, cur, payload); err != nil {
				return err
			}
		case recCommitEnd:
			if cur == nil {
				return formatf("commit end outside a commit")
			}
			if err := l.endCommit(ctx, cur); err != nil {
				return fmt.Errorf("commit %s: %w", cur.id, err)
			}
			cur = nil
		case recBranch:
			var b branchDoc
			if err := decodeStrict(payload, &b); err != nil {
				return err
			}
			head, err := manifest.ParseCommitID(b.Head)
			if err != nil {
				return formatf("branch %s: head: %v", b.Name, err)
			}
			var base manifest.CommitID
			if b.Base != "" {
				if base, err = manifest.ParseCommitID(b.Base); err != nil {
					return formatf("branch %s: base: %v", b.Name, err)
				}
			}
			if err := l.rs.Branch(b.Name, head, base, b.Protected, b.Created); err != nil {
				return err
			}
			l.rep.Branches++
		case recCheckpoint:
			var c checkpointDoc
			if err := decodeStrict(payload, &c); err != nil {
				return err
			}
			id, err := manifest.ParseCommitID(c.Commit)
			if err != nil {
				return formatf("checkpoint %s: %v", c.Name, err)
			}
			if err := l.rs.Checkpoint(c.Branch, string(c.Name), id, time.Unix(0, c.Created).UTC()); err != nil {
				return err
			}
		case recEnd:
			if cur != nil {
				return formatf("stream ended inside commit %s", cur.id)
			}
			// Read to the end: a signed upload verifies its last chunk there.
			return l.sr.expectEOF()
		default:
			return formatf("unexpected record %q", kind)
		}
	}
}

// pendingCommit is the commit being loaded.
type pendingCommit struct {
	id   manifest.CommitID
	c    *manifest.Commit
	info *branch.CommitInfo
}

func (l *loader) beginCommit(payload []byte) (*pendingCommit, error) {
	var doc commitDoc
	if err := decodeStrict(payload, &doc); err != nil {
		return nil, err
	}
	id, c, info, err := doc.commit()
	if err != nil {
		return nil, err
	}
	l.root = chunk.Hash{}
	if doc.Base != nil && *doc.Base != "" {
		bid, err := manifest.ParseCommitID(*doc.Base)
		if err != nil {
			return nil, formatf("commit %s: base: %v", id, err)
		}
		if !slices.Contains(c.Parents, bid) {
			return nil, formatf("commit %s: base %s is not a parent", id, bid)
		}
		root, ok := l.rs.Root(bid)
		if !ok {
			return nil, formatf("commit %s: base %s comes later or not at all", id, bid)
		}
		l.root = root
	}
	return &pendingCommit{id: id, c: c, info: info}, nil
}

func (l *loader) entry(ctx context.Context, pc *pendingCommit, payload []byte) error {
	var rec entryRec
	if err := decodeStrict(payload, &rec); err != nil {
		return err
	}
	key := string(rec.Key)
	if err := branch.ValidKey(key); err != nil {
		return formatf("key %q: %v", key, err)
	}
	l.rep.Entries++
	if rec.Delete {
		if rec.Entry != "" || rec.Data != "" {
			return formatf("%q: a delete carries an entry", key)
		}
		return l.edit(ctx, tree.Edit{Key: []byte(key), Delete: true})
	}
	enc, err := base64.StdEncoding.DecodeString(rec.Entry)
	if err != nil {
		return formatf("%q: entry: %v", key, err)
	}
	e, err := manifest.DecodeEntry(enc)
	if err != nil {
		return mismatchf("%q: entry does not decode: %v", key, err)
	}
	if !bytes.Equal(e.Encode(), enc) {
		return mismatchf("%q: entry is not in canonical form", key)
	}
	var chunks []chunk.Ref
	var content *manifest.Content
	switch {
	case e.Lazy():
		l.rep.Lazy++
	case e.Content != nil:
		chunks, content = e.Content.Chunks, e.Content
	case !e.ContentRef.IsZero():
		list, err := base64.StdEncoding.DecodeString(rec.List)
		if err != nil || len(list) == 0 {
			return formatf("%q: entry stored by reference without its content list", key)
		}
		if chunk.Sum(list) != e.ContentRef {
			return mismatchf("%q: content list does not hash to %s", key, e.ContentRef)
		}
		c, err := manifest.DecodeContent(list)
		if err != nil {
			return mismatchf("%q: content list: %v", key, err)
		}
		chunks, content = c.Chunks, c
		if err := l.rs.Content(ctx, e.ContentRef, list); err != nil {
			return err
		}
	}
	if rec.List != "" && e.ContentRef.IsZero() {
		return formatf("%q: content list for an entry that has none", key)
	}
	if !e.Lazy() {
		var n int64
		for _, c := range chunks {
			n += int64(c.Size)
		}
		if n != manifest.StoredSize(e, content) || !plainFits(e, content) {
			return mismatchf("%q: chunks hold %d bytes, the entry says %d", key, n, e.Size)
		}
	}
	if err := l.data(ctx, key, rec.Data, chunks); err != nil {
		return err
	}
	if rec.Writer != "" {
		w, err := parseHexID(rec.Writer)
		if err != nil {
			return err
		}
		if err := l.rs.Version(ctx, key, e.VersionID, w, enc); err != nil {
			return err
		}
	}
	return l.edit(ctx, tree.Edit{Key: []byte(key), Value: enc})
}

// plainFits reports whether content (nil for none) holds e's size of
// plaintext.
func plainFits(e *manifest.Entry, content *manifest.Content) bool {
	if content == nil {
		return true
	}
	n, ok := content.PlainSize()
	return ok && n == e.Size
}

// data receives or checks the chunks of an entry.
func (l *loader) data(ctx context.Context, key, mode string, chunks []chunk.Ref) error {
	if l.up == nil {
		l.up, l.upHas = l.svc.Chunks().NewUpload(), map[chunk.Hash]struct{}{}
	}
	switch {
	case mode == dataInline:
		for i, ref := range chunks {
			kind, b, err := l.sr.next()
			if err != nil {
				return err
			}
			if kind != recData {
				return formatf("%q: %d of %d chunks before record %q", key, i, len(chunks), kind)
			}
			if len(b) != int(ref.Size) || chunk.Sum(b) != ref.Hash {
				return mismatchf("%q: chunk %d of %d bytes does not hash to %s (%d bytes)", key, i, len(b), ref.Hash, ref.Size)
			}
			if _, err := l.up.Put(ctx, b); err != nil {
				return err
			}
			l.upHas[ref.Hash] = struct{}{}
			if len(b) <= cas.InlineMax {
				l.upBytes += int64(len(b))
			}
			l.rep.Bytes += int64(len(b))
			if l.upBytes >= uploadFlush || len(l.upHas) >= uploadChunks {
				if err := l.flushUpload(ctx); err != nil {
					return err
				}
				l.up, l.upHas = l.svc.Chunks().NewUpload(), map[chunk.Hash]struct{}{}
			}
		}
		return nil
	case mode == dataNone && len(chunks) == 0:
		return nil
	case mode == dataHave || len(mode) > len(dataFrom) && mode[:len(dataFrom)] == dataFrom:
		l.up.Pin(chunks)
		for _, ref := range chunks {
			if _, ok := l.upHas[ref.Hash]; ok {
				continue
			}
			ok, err := l.svc.Chunks().Has(ctx, ref.Hash)
			if err != nil {
				return err
			}
			if !ok {
				return mismatchf("%q: chunk %s was said to be sent before but was not", key, ref.Hash)
			}
		}
		return nil
	}
	return formatf("%q: data mode %q for %d chunks", key, mode, len(chunks))
}

// flushUpload makes the chunks written so far durable and indexed.
func (l *loader) flushUpload(ctx context.Context) error {
	if l.up == nil {
		return nil
	}
	u := l.up
	l.up, l.upBytes = nil, 0
	defer u.Close()
	if err := u.Sync(ctx); err != nil {
		return err
	}
	return l.svc.Manifest().DB().Update(ctx, func(txn kv.Txn) error { return u.Record(txn) })
}

func (l *loader) closeUpload() {
	if l.up != nil {
		l.up.Close()
		l.up = nil
	}
}

func (l *loader) edit(ctx context.Context, e tree.Edit) error {
	l.edits = append(l.edits, e)
	if len(l.edits) >= applyPage {
		return l.apply(ctx)
	}
	return nil
}

func (l *loader) apply(ctx context.Context) error {
	if len(l.edits) == 0 {
		return nil
	}
	slices.SortFunc(l.edits, func(a, b tree.Edit) int { return bytes.Compare(a.Key, b.Key) })
	for i := 1; i < len(l.edits); i++ {
		if bytes.Equal(l.edits[i-1].Key, l.edits[i].Key) {
			return formatf("key %q changed twice in one commit", l.edits[i].Key)
		}
	}
	root, err := l.t.Apply(ctx, l.root, tree.SliceEdits(l.edits))
	if err != nil {
		return err
	}
	l.root = root
	clear(l.edits)
	l.edits = l.edits[:0]
	return nil
}

func (l *loader) endCommit(ctx context.Context, pc *pendingCommit) error {
	if err := l.apply(ctx); err != nil {
		return err
	}
	if err := l.flushUpload(ctx); err != nil {
		return err
	}
	if l.root != pc.c.Tree {
		return mismatchf("the rebuilt tree has root %s, the commit names %s (an object or its metadata was altered)", l.root, pc.c.Tree)
	}
	id, err := l.rs.Commit(ctx, pc.c, pc.info)
	if err != nil {
		return err
	}
	if id != pc.id {
		return mismatchf("stored as %s", id)
	}
	l.rep.Commits++
	return nil
}
