package branch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// view is what a read sees: a branch record and its head's tree root.
type view struct {
	rr   *repoRecord
	br   *branchRecord
	root chunk.Hash
}

func (s *Service) openView(ctx context.Context, r kv.Reader, repo, branch string) (*view, error) {
	rr, err := s.repo(r, repo)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		branch = rr.DefaultBranch
	}
	br, err := s.branch(r, rr, branch)
	if err != nil {
		return nil, err
	}
	if br.expired(time.Now()) {
		return nil, fmt.Errorf("%s/%s expired at %s: %w", repo, branch,
			time.Unix(0, br.ExpiresAt).UTC().Format(time.RFC3339), ErrNoSuchBranch)
	}
	root, err := s.root(ctx, br.Head)
	if err != nil {
		return nil, err
	}
	return &view{rr: rr, br: br, root: root}, nil
}

// viewAt returns v as of commit id (zero: v itself): the commit's tree
// and no staging. The commit must be in the branch's history, as for a
// versionId read.
func (s *Service) viewAt(ctx context.Context, r kv.Reader, v *view, id manifest.CommitID) (*view, error) {
	if id.IsZero() {
		return v, nil
	}
	ci, err := s.commitInfo(r, v.rr, id)
	if err != nil || !sees(v.br.Lineage, ci.Branch, ci.Seq) {
		return nil, fmt.Errorf("%s/%s as of %s: %w", v.rr.Name, v.br.Name, id, ErrNoSuchVersion)
	}
	root, err := s.root(ctx, id)
	if err != nil {
		return nil, err
	}
	br := *v.br
	br.Head, br.Gen, br.SealedGen = id, 0, 0
	return &view{rr: v.rr, br: &br, root: root}, nil
}

// current is the value a key has in a view.
type current struct {
	entry []byte // encoded entry; nil when absent or deleted
	vid   string
	seq   uint64 // 0 when the value comes from the tree
}

// lookup finds key in the open generation, then the sealed one, then the
// head tree.
func (s *Service) lookup(ctx context.Context, r kv.Reader, v *view, key string) (current, error) {
	for _, gen := range []uint64{v.br.Gen, v.br.SealedGen} {
		if gen == 0 {
			continue
		}
		b, err := r.Get(stageKey(v.rr.ID, v.br.ID, gen, key))
		if errors.Is(err, kv.ErrNotFound) {
			continue
		}
		if err != nil {
			return current{}, err
		}
		st, err := decodeStaged(b)
		if err != nil {
			return current{}, err
		}
		if st.del {
			return current{vid: st.vid, seq: st.seq}, nil
		}
		return current{entry: st.entry, vid: st.vid, seq: st.seq}, nil
	}
	val, found, err := s.treeFor(v.rr).Get(ctx, v.root, []byte(key))
	if err != nil || !found {
		return current{}, err
	}
	return current{entry: val}, nil
}

// Get returns the current entry of key on a branch.
func (s *Service) Get(ctx context.Context, repo, branch, key string) (*manifest.Entry, error) {
	var cur current
	err := s.db.View(ctx, func(r kv.Reader) error {
		v, err := s.openView(ctx, r, repo, branch)
		if err != nil {
			return err
		}
		cur, err = s.lookup(ctx, r, v, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	if cur.entry == nil {
		return nil, fmt.Errorf("%s: %w", key, ErrNoSuchKey)
	}
	return manifest.DecodeEntry(cur.entry)
}

// Condition is a precondition on the current state of a key, checked
// atomically with a write, and who writes.
type Condition struct {
	IfMatch     string // the current ETag must equal it ("*" = must exist)
	IfNoneMatch string // "*": the key must not exist; else the ETag must differ
	// By is the lease that writes (zero for the owner): the commit that
	// folds the write names it (CommitInfo's StagedBy), so a commit made
	// by someone else still explains back to every lease in it.
	By Writer
	// Hidden, when set, reports whether the writer may not know that e,
	// the current entry of key, exists (it is above a lease's sensitivity
	// ceiling). For such a writer the key is missing: the preconditions
	// see no entry, a delete leaves the entry in place and changes
	// nothing, and a write replaces it. It is evaluated inside the
	// transaction, so the answer cannot race with a write that labels e.
	Hidden func(key string, e *manifest.Entry) bool
}

// hides reports whether cur holds an entry hidden from the writer.
func (c Condition) hides(key string, cur current) (bool, error) {
	if cur.entry == nil || c.Hidden == nil {
		return false, nil
	}
	e, err := c.visible(key, cur)
	return err == nil && e == nil, err
}

// visible is cur's entry as the writer may see it: nil when absent,
// deleted, or hidden from the writer.
func (c Condition) visible(key string, cur current) (*manifest.Entry, error) {
	if cur.entry == nil {
		return nil, nil
	}
	e, err := manifest.DecodeEntry(cur.entry)
	if err != nil || c.Hidden != nil && c.Hidden(key, e) {
		return nil, err
	}
	return e, nil
}

// Writer is a lease that wrote staged changes, with its run.
type Writer struct {
	Lease, Run string
}

func (c Condition) check(key string, cur current) error {
	if c.IfMatch == "" && c.IfNoneMatch == "" {
		return nil
	}
	e, err := c.visible(key, cur)
	if err != nil {
		return err
	}
	if c.IfMatch != "" {
		if e == nil {
			return fmt.Errorf("%s: %w", key, ErrNoSuchKey)
		}
		if c.IfMatch != "*" && c.IfMatch != e.ETag {
			return fmt.Errorf("%s: If-Match: %w", key, ErrPrecondition)
		}
	}
	if c.IfNoneMatch != "" && e != nil && (c.IfNoneMatch == "*" || c.IfNoneMatch == e.ETag) {
		return fmt.Errorf("%s: If-None-Match: %w", key, ErrPrecondition)
	}
	return nil
}

// Recorder writes durable companions of an entry (chunk index records,
// content lists) into the transaction that stages it.
type Recorder interface {
	Record(txn kv.Txn) error
}

// ContentRecord is a Recorder for a content list stored by hash.
type ContentRecord struct {
	Hash chunk.Hash
	Data []byte
}

// Record implements Recorder.
func (c ContentRecord) Record(txn kv.Txn) error {
	if c.Data == nil {
		return nil
	}
	return txn.Set(manifest.ContentKey(c.Hash), c.Data)
}

// Put stages e as the new version of key on a branch, atomically with cond
// and with recs. It assigns the version ID and, when unset, the
// modification time, and returns the stored entry.
func (s *Service) Put(ctx context.Context, repo, branch, key string, e *manifest.Entry, cond Condition, recs ...Recorder) (*manifest.Entry, error) {
	out := s.PutKeys(ctx, repo, branch, []PutItem{{Key: key, Entry: e, Cond: cond}}, recs...)
	return out[0].Entry, out[0].Err
}

// validSize refuses an entry no object can have: a negative size, one
// beyond S3's 5 TiB, or content that does not add up to it.
func validSize(e *manifest.Entry) error {
	if e.Size < 0 || e.Size > manifest.MaxSize {
		return fmt.Errorf("size %d outside 0..%d: %w", e.Size, int64(manifest.MaxSize), ErrInvalid)
	}
	if e.Content == nil {
		return nil
	}
	if n, ok := e.Content.PlainSize(); !ok || n != e.Size {
		return fmt.Errorf("size %d, content of %d bytes: %w", e.Size, n, ErrInvalid)
	}
	return nil
}

func (s *Service) writableView(ctx context.Context, r kv.Reader, repo, branch string) (*view, error) {
	v, err := s.openView(ctx, r, repo, branch)
	if err != nil {
		return nil, err
	}
	if v.br.Protected {
		return nil, fmt.Errorf("%s/%s: %w", repo, v.br.Name, ErrProtected)
	}
	return v, nil
}

// setter is where stage writes: a kv.Txn, or a kv.Batch for bulk staging.
type setter interface {
	Set(key, value []byte) error
}

// stage writes a staged value with its version record and index entry.
func (s *Service) stage(txn setter, v *view, key string, st staged) error {
	if err := s.stageValue(txn, v, key, st); err != nil {
		return err
	}
	vr := versionRecord{key: key, branch: v.br.ID, staged: st}
	if err := txn.Set(versionKey(v.rr.ID, st.vid), vr.encode()); err != nil {
		return err
	}
	return txn.Set(keyVersionKey(v.rr.ID, key, st.seq), []byte(st.vid))
}

// stageValue writes a staged value and its writer into the open
// generation, and no version record: stage adds those for a new version.
func (s *Service) stageValue(txn setter, v *view, key string, st staged) error {
	if err := txn.Set(stageKey(v.rr.ID, v.br.ID, v.br.Gen, key), st.encode()); err != nil {
		return err
	}
	if st.by.Lease == "" {
		return nil
	}
	return txn.Set(append(writerPrefix(v.rr.ID, v.br.ID, v.br.Gen), st.by.Lease...), []byte(st.by.Run))
}

// DeleteResult says what a delete did.
type DeleteResult struct {
	VersionID    string // the delete marker's version, or the version removed
	DeleteMarker bool   // a delete marker was created or addressed
	// Hidden says the key's entry is hidden from the writer (Condition's
	// Hidden) and was left in place: the writer was answered as if the key
	// were missing.
	Hidden bool
}

// Delete removes key from a branch by staging a tombstone (a delete
// marker). Deleting a key whose current state is a staged delete marker
// stacks another marker, as S3 does; deleting a key that was never
// written, or whose deletion is committed, succeeds and changes nothing.
func (s *Service) Delete(ctx context.Context, repo, branch, key string, cond Condition) (DeleteResult, error) {
	var res DeleteResult
	var q *quotaTxn
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		q.release()
		q, res = nil, DeleteResult{}
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		_, err = s.deleteIn(ctx, txn, v, key, cond, &q, &res)
		return err
	})
	if err != nil {
		q.release()
	}
	return res, err
}

func (s *Service) tombstone(txn kv.Txn, v *view, key string, by Writer, res *DeleteResult) error {
	seq := s.clk.next()
	st := staged{del: true, seq: seq, vid: newVersionID(seq, rand.Uint32()), by: by}
	res.VersionID, res.DeleteMarker = st.vid, true
	return s.stage(txn, v, key, st)
}

// versionRecord loads version vid of key as seen by view v.
func (s *Service) versionRecord(r kv.Reader, v *view, key, vid string) (versionRecord, error) {
	b, err := r.Get(versionKey(v.rr.ID, vid))
	if errors.Is(err, kv.ErrNotFound) {
		return versionRecord{}, fmt.Errorf("%s version %s: %w", key, vid, ErrNoSuchVersion)
	}
	if err != nil {
		return versionRecord{}, err
	}
	rec, err := decodeVersion(b)
	if err != nil {
		return rec, err
	}
	if rec.key != key || !sees(v.br.Lineage, rec.branch, rec.seq) {
		return rec, fmt.Errorf("%s version %s: %w", key, vid, ErrNoSuchVersion)
	}
	return rec, nil
}

// GetVersion returns version vid of key as seen from a branch: a version ID
// of a version the branch has seen (staged, overwritten or committed), or a
// commit ID in the branch's history, meaning the object as of that commit.
// A delete marker returns a nil entry and deleteMarker true.
func (s *Service) GetVersion(ctx context.Context, repo, branch, key, vid string) (e *manifest.Entry, deleteMarker bool, err error) {
	var entry []byte
	err = s.db.View(ctx, func(r kv.Reader) error {
		v, err := s.openView(ctx, r, repo, branch)
		if err != nil {
			return err
		}
		if id, perr := manifest.ParseCommitID(vid); perr == nil {
			ci, err := s.commitInfo(r, v.rr, id)
			if err != nil || !sees(v.br.Lineage, ci.Branch, ci.Seq) {
				return fmt.Errorf("%s version %s: %w", key, vid, ErrNoSuchVersion)
			}
			root, err := s.root(ctx, id)
			if err != nil {
				return err
			}
			val, found, err := s.treeFor(v.rr).Get(ctx, root, []byte(key))
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%s as of %s: %w", key, vid, ErrNoSuchKey)
			}
			entry = val
			return nil
		}
		if _, ok := versionSeq(vid); !ok {
			return fmt.Errorf("version id %q: %w", vid, ErrInvalid)
		}
		// The branch's current value, when it is that version, is what
		// the branch holds of it now (its tags may have changed since the
		// version record was written, or the record expired).
		cur, err := s.currentIf(ctx, r, v, key, vid)
		if err != nil || cur != nil {
			entry = cur
			return err
		}
		rec, err := s.versionRecord(r, v, key, vid)
		if err != nil {
			return err
		}
		if rec.del {
			deleteMarker = true
			return nil
		}
		entry = rec.entry
		return nil
	})
	if err != nil || deleteMarker {
		return nil, deleteMarker, err
	}
	e, err = manifest.DecodeEntry(entry)
	return e, false, err
}

// currentIf returns the encoded current entry of key in v if its
// version is vid, else nil.
func (s *Service) currentIf(ctx context.Context, r kv.Reader, v *view, key, vid string) ([]byte, error) {
	cur, err := s.currentVersion(ctx, r, v, key)
	if err != nil || cur.entry == nil || cur.vid != vid {
		return nil, err
	}
	return cur.entry, nil
}

// ValidKey checks the S3 limits on a key: 1 to 1024 bytes. Keys are
// otherwise raw bytes and are never cleaned or normalized.
func ValidKey(key string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("key of %d bytes: must be 1-1024 bytes: %w", len(key), ErrInvalid)
	}
	return nil
}

func (br *branchRecord) commitSeq() uint64 { return br.CommitSeq }
