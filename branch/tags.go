package branch

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// SetTags replaces the tag set of one version of key on a branch and
// returns that version with its new tags. nil tags remove them all. vid
// "" means the current version. Which versions can change is retouch's
// rule.
func (s *Service) SetTags(ctx context.Context, repo, branch, key, vid string, tags []manifest.Pair, by Writer) (*manifest.Entry, error) {
	return s.retouch(ctx, repo, branch, key, vid, "tags", func(e *manifest.Entry) { e.Tags = tags }, by)
}

// SetACL replaces the ACL of one version of key on a branch (nil: none,
// which answers as private) and returns that version with it. vid ""
// means the current version. Which versions can change is retouch's rule.
func (s *Service) SetACL(ctx context.Context, repo, branch, key, vid string, a *acl.ACL, by Writer) (*manifest.Entry, error) {
	return s.retouch(ctx, repo, branch, key, vid, "ACL", func(e *manifest.Entry) { e.ACL = a }, by)
}

// retouch applies change, which alters only what belongs to a version
// without making a new one (its tags, its ACL: what sameVersion ignores),
// to one version of key and returns the changed entry. The version keeps
// its bytes, metadata and version ID. what names the change in errors.
//
//   - The current version is staged again, the changed entry under the
//     same version ID, so the next commit records the change like any
//     other (it shows in changes and diffs as modified). Reads of the
//     current version, by key or by its version ID, see it at once.
//   - An older version that no commit has folded yet (overwritten in this
//     branch's staging, not history) has its version record rewritten.
//   - Any other older version is committed history, and history is
//     immutable: ErrImmutable. So is a commit ID given as vid.
//
// The version record of a committed version is never rewritten: other
// branches forked from its commit share it. Once a committed version that
// was retouched is overwritten, reading it by version ID shows it as the
// version record holds it; the commits hold every state it had.
func (s *Service) retouch(ctx context.Context, repo, branch, key, vid, what string, change func(*manifest.Entry), by Writer) (*manifest.Entry, error) {
	var out *manifest.Entry
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		cur, err := s.lookup(ctx, txn, v, key)
		if err != nil {
			return err
		}
		if cur.entry == nil && vid == "" {
			return fmt.Errorf("%s: %w", key, ErrNoSuchKey)
		}
		if cur.entry != nil {
			e, err := manifest.DecodeEntry(cur.entry)
			if err != nil {
				return err
			}
			if vid == "" || e.VersionID == vid {
				change(e)
				out = e
				return s.retouchCurrent(txn, v, key, e, by)
			}
		}
		out, err = s.retouchStaged(txn, v, key, vid, what, change)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retouchCurrent stages e, the current version of key retouched, under
// its own version ID. A version this branch wrote since its last commit
// has its version record rewritten too (no fork can see it yet); the
// record of a committed one stays as history has it.
func (s *Service) retouchCurrent(txn kv.Txn, v *view, key string, e *manifest.Entry, by Writer) error {
	st := staged{vid: e.VersionID, entry: e.Encode(), by: by}
	rec, err := s.versionRecord(txn, v, key, e.VersionID)
	switch {
	case err == nil && s.uncommitted(v, rec):
		st.seq = rec.seq
		return s.stage(txn, v, key, st)
	case err != nil && !errors.Is(err, ErrNoSuchVersion):
		return err
	}
	st.seq = s.clk.next()
	return s.stageValue(txn, v, key, st)
}

// uncommitted reports whether rec is a version v's branch wrote that no
// commit has folded: not history, and seen by no other branch.
func (s *Service) uncommitted(v *view, rec versionRecord) bool {
	return rec.branch == v.br.ID && rec.seq > v.br.commitSeq() && !rec.del
}

// retouchStaged applies change to vid, an older version of key that must
// not be history yet.
func (s *Service) retouchStaged(txn kv.Txn, v *view, key, vid, what string, change func(*manifest.Entry)) (*manifest.Entry, error) {
	if _, err := manifest.ParseCommitID(vid); err == nil {
		return nil, fmt.Errorf("%s as of commit %s: the %s of history cannot change: %w", key, vid, what, ErrImmutable)
	}
	if _, ok := versionSeq(vid); !ok {
		return nil, fmt.Errorf("version id %q: %w", vid, ErrInvalid)
	}
	rec, err := s.versionRecord(txn, v, key, vid)
	if err != nil {
		return nil, err
	}
	if rec.del {
		return nil, fmt.Errorf("%s version %s is a delete marker: %w", key, vid, ErrNoSuchVersion)
	}
	if !s.uncommitted(v, rec) {
		return nil, fmt.Errorf("%s version %s is committed and not current: only the current version's %s can change: %w", key, vid, what, ErrImmutable)
	}
	e, err := manifest.DecodeEntry(rec.entry)
	if err != nil {
		return nil, err
	}
	change(e)
	rec.entry = e.Encode()
	return e, txn.Set(versionKey(v.rr.ID, vid), rec.encode())
}

// sameVersion reports whether two encoded entries are one version, alike
// but for their tags and ACL (all that retouch changes).
func sameVersion(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	ea, err1 := manifest.DecodeEntry(a)
	eb, err2 := manifest.DecodeEntry(b)
	if err1 != nil || err2 != nil {
		return false
	}
	ea.Tags, eb.Tags = nil, nil
	ea.ACL, eb.ACL = nil, nil
	return bytes.Equal(ea.Encode(), eb.Encode())
}

// sameRecord reports whether the encoded version record old and rec are
// one version's record, alike but for the entry's tags and ACL.
func sameRecord(old []byte, rec versionRecord) bool {
	o, err := decodeVersion(old)
	return err == nil && o.key == rec.key && o.branch == rec.branch && o.seq == rec.seq && o.vid == rec.vid &&
		o.del == rec.del && sameVersion(o.entry, rec.entry)
}
