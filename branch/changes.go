package branch

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// The change journal tells a client which keys of a branch changed since
// it last asked, so a file system may trust what it knows of every other
// name (the mount keeps kernel entries for long while it follows the
// journal, instead of asking again every second).
//
// It is fed below the branch's own code, by the kv writes this Service
// commits: a staging record written or removed names its key; a branch
// record written or removed (a commit, a merge, a reset, a restore, a
// limit) says "everything may have changed" for that branch. Nothing that
// changes what a branch shows can write its records without passing
// through it. The journal lives in memory (cursors are sealed with a key
// of this process, so a restart's journal opens none of before) and hears
// only this gateway's writes, so with several gateways
// (SetLocker) it answers Coherent false and clients keep their short
// trust.

// journalSize is how many changes the journal keeps, across every
// repository: a client that fell further behind is told everything may
// have changed. 16,384 entries of a key each (about 100 bytes with the
// struct) cost under 2 MiB.
const journalSize = 16384

// change is one journal entry: key (staged) of branch branchID, or every
// key of branch name when all is set. Cost: about 64 bytes plus the key.
type change struct {
	repo     uint64
	branchID uint64 // of a staging record; 0 with all
	name     string // the branch record's name, with all
	key      string
	vid      string // the staged version ("" for a staging record removed)
	del      bool   // the staged version is a delete marker
	all      bool
}

// journal is a ring of the latest changes, numbered from 1.
type journal struct {
	// aead seals cursors with this process's key: a cursor says nothing
	// of the journal's position (how much every repository changed) or of
	// internal IDs, cannot be forged, and one of another process does not
	// open.
	aead cipher.AEAD

	mu   sync.Mutex // guards ring and next
	ring [journalSize]change
	next uint64 // number of the next change; ring[n%journalSize] holds n
}

func newJournal() *journal {
	var key [32]byte
	_, _ = rand.Read(key[:])
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &journal{aead: aead, next: 1}
}

// add appends cs.
func (j *journal) add(cs []change) {
	if len(cs) == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, c := range cs {
		j.ring[j.next%journalSize] = c
		j.next++
	}
}

// noteKV turns a committed kv write into journal changes: staging records
// name their key, branch records their whole branch. Other key spaces
// change nothing a branch shows.
func noteKV(out []change, key, value []byte) []change {
	switch {
	case bytes.HasPrefix(key, []byte(keyspace.Stage)):
		rest := key[len(keyspace.Stage):]
		if len(rest) < 24 {
			return out
		}
		c := change{repo: binary.BigEndian.Uint64(rest), branchID: binary.BigEndian.Uint64(rest[8:]), key: string(rest[24:])}
		if value != nil {
			if del, _, vid, _, err := parseStaged(value); err == nil {
				c.vid, c.del = string(vid), del
			}
		}
		return append(out, c)
	case bytes.HasPrefix(key, []byte(keyspace.Branch)):
		rest := key[len(keyspace.Branch):]
		if len(rest) < 8 {
			return out
		}
		c := change{repo: binary.BigEndian.Uint64(rest), name: string(rest[8:]), all: true}
		var br branchRecord
		if value != nil && json.Unmarshal(value, &br) == nil {
			c.name = br.Name
		}
		return append(out, c)
	}
	return out
}

// Touched is what changed on a branch since a cursor.
type Touched struct {
	// Cursor is where the next call starts: the branch's identity and the
	// last change seen, sealed with this process's key.
	Cursor string
	// All is set when anything may have changed (the cursor was of
	// another journal, another branch of the same name, or too old, or
	// the branch's head moved); Keys is then empty.
	All bool
	// Keys changed (staged writes and deletes), each once with its latest
	// version, in the order of their first change. The caller filters
	// what it may see.
	Keys []TouchedKey
	// Coherent is false when writes this gateway does not see can change
	// the branch (several gateways): the journal is then not to be
	// trusted for long.
	Coherent bool
}

// TouchedKey is a key that changed and the version it holds now (a
// delete marker's, with Deleted, for a delete; "" when a staged change
// was dropped).
type TouchedKey struct {
	Key, VersionID string
	Deleted        bool
}

// journalCursor is what Touched.Cursor carries, sealed (journal.seal).
type journalCursor struct {
	repo, branchID uint64
	seq            uint64
}

// seal is c as an opaque cursor: hex of a random nonce and c sealed.
func (j *journal) seal(c journalCursor) string {
	nonce := make([]byte, j.aead.NonceSize(), j.aead.NonceSize()+24+j.aead.Overhead())
	_, _ = rand.Read(nonce)
	plain := u64(u64(u64(make([]byte, 0, 24), c.repo), c.branchID), c.seq)
	return hex.EncodeToString(j.aead.Seal(nonce, nonce, plain, nil))
}

// open is the cursor s sealed, if this journal sealed it.
func (j *journal) open(s string) (journalCursor, bool) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != j.aead.NonceSize()+24+j.aead.Overhead() {
		return journalCursor{}, false
	}
	n := j.aead.NonceSize()
	plain, err := j.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil || len(plain) != 24 {
		return journalCursor{}, false
	}
	return journalCursor{repo: binary.BigEndian.Uint64(plain), branchID: binary.BigEndian.Uint64(plain[8:]),
		seq: binary.BigEndian.Uint64(plain[16:])}, true
}

// maxChangedBytes bounds the key bytes one answer names (past it, All).
const maxChangedBytes = 1 << 20

// since reads the journal after cur for branch (repo, id, name); ok is
// false when cur cannot be followed (All). The lock is held for one pass
// that copies the branch's changes, not for their deduplication: every
// write of the gateway waits on it.
func (j *journal) since(cur journalCursor, repo, id uint64, name string) (keys []TouchedKey, last uint64, ok bool) {
	var mine []change
	j.mu.Lock()
	last = j.next - 1
	ok = cur.repo == repo && cur.branchID == id && cur.seq <= last && last-cur.seq < journalSize
	for n := cur.seq + 1; ok && n <= last; n++ {
		c := &j.ring[n%journalSize]
		switch {
		case c.repo != repo:
		case c.all:
			ok = c.name != name
		case c.branchID == id:
			mine = append(mine, *c)
		}
	}
	j.mu.Unlock()
	if !ok {
		return nil, last, false
	}
	seen := map[string]int{} // key -> index in keys
	size := 0
	for _, c := range mine {
		if i, dup := seen[c.key]; dup {
			keys[i].VersionID, keys[i].Deleted = c.vid, c.del
			continue
		}
		if size += len(c.key); size > maxChangedBytes {
			return nil, last, false
		}
		seen[c.key] = len(keys)
		keys = append(keys, TouchedKey{Key: c.key, VersionID: c.vid, Deleted: c.del})
	}
	return keys, last, true
}

// TouchedSince tells what changed on repo/branch since cursor ("" for a
// first call, which answers All and a cursor to follow from).
func (s *Service) TouchedSince(ctx context.Context, repo, branch, cursor string) (*Touched, error) {
	var rid, bid uint64
	var name string
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		if branch == "" {
			branch = rr.DefaultBranch
		}
		br, err := s.branch(r, rr, branch)
		if err != nil {
			return err
		}
		rid, bid, name = rr.ID, br.ID, br.Name
		return nil
	})
	if err != nil {
		return nil, err
	}
	cur, ok := s.journal.open(cursor)
	keys, last, ok2 := s.journal.since(cur, rid, bid, name)
	out := &Touched{Cursor: s.journal.seal(journalCursor{repo: rid, branchID: bid, seq: last}),
		All: !ok || !ok2, Coherent: s.locker == nil}
	if !out.All {
		out.Keys = keys
	}
	return out, nil
}

// viewKeptKey marks a context whose writes leave what every branch shows
// as it was (keepsView).
type viewKeptKey struct{}

// keepsView marks ctx for writes the journal need not hear: a commit's
// seal, head swap and clearing of the folded staging show the same keys
// and versions before and after (the head then holds what staging held).
func keepsView(ctx context.Context) context.Context {
	return context.WithValue(ctx, viewKeptKey{}, true)
}

func viewKept(ctx context.Context) bool { return ctx.Value(viewKeptKey{}) != nil }

// observed is the Service's kv store with every committed write noted in
// the journal.
type observed struct {
	kv.DB
	j *journal
}

// Update runs fn and notes the writes of its last attempt unless fn
// refused them (a commit that failed may still have written: a false
// change costs a client a lookup, a missed one a stale name).
func (o observed) Update(ctx context.Context, fn func(kv.Txn) error) error {
	if viewKept(ctx) {
		return o.DB.Update(ctx, fn)
	}
	var t noting
	var fnErr error
	err := o.DB.Update(ctx, func(txn kv.Txn) error {
		t = noting{Txn: txn}
		fnErr = fn(&t)
		return fnErr
	})
	if fnErr == nil {
		o.j.add(t.changes)
	}
	return err
}

// Batch notes the batch's writes once it is flushed.
func (o observed) Batch(ctx context.Context) kv.Batch {
	if viewKept(ctx) {
		return o.DB.Batch(ctx)
	}
	return &notingBatch{Batch: o.DB.Batch(ctx), j: o.j}
}

// noting is a transaction that collects the changes of its writes.
type noting struct {
	kv.Txn
	changes []change
}

func (t *noting) Set(key, value []byte) error {
	t.changes = noteKV(t.changes, key, value)
	return t.Txn.Set(key, value)
}

func (t *noting) Delete(key []byte) error {
	t.changes = noteKV(t.changes, key, nil)
	return t.Txn.Delete(key)
}

// notingBatch is a batch that notes its writes when flushed.
type notingBatch struct {
	kv.Batch
	j       *journal
	changes []change
}

func (b *notingBatch) Set(key, value []byte) error {
	b.changes = noteKV(b.changes, key, value)
	return b.Batch.Set(key, value)
}

func (b *notingBatch) Delete(key []byte) error {
	b.changes = noteKV(b.changes, key, nil)
	return b.Batch.Delete(key)
}

func (b *notingBatch) Flush() error {
	err := b.Batch.Flush()
	// Even a failed flush may have written some: note them all (a false
	// change costs a client a lookup, a missed one a stale name).
	b.j.add(b.changes)
	b.changes = nil
	return err
}

func (b *notingBatch) Cancel() {
	b.changes = nil
	b.Batch.Cancel()
}
