package branch

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// SetTags replaces the tag set of one version of key on a branch and
// returns that version with its new tags. The version keeps its bytes,
// metadata and version ID: tags are a property of a version, not a new
// one. nil tags remove them all. vid "" means the current version.
//
//   - The current version is staged again, the same entry with the new
//     tags under the same version ID, so the next commit records the
//     change like any other (it shows in changes and diffs as modified).
//     Reads of the current version, by key or by its version ID, see the
//     new tags at once.
//   - An older version that no commit has folded yet (overwritten in this
//     branch's staging, not history) has its version record rewritten.
//   - Any other older version is committed history, and history is
//     immutable: ErrImmutable. So is a commit ID given as vid.
//
// The version record of a committed version is never rewritten: other
// branches forked from its commit share it. Once a committed version that
// was tagged is overwritten, reading it by version ID shows it as the
// version record holds it; the commits hold every tag set it had.
func (s *Service) SetTags(ctx context.Context, repo, branch, key, vid string, tags []manifest.Pair, by Writer) (*manifest.Entry, error) {
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
				e.Tags = tags
				out = e
				return s.retagCurrent(txn, v, key, e, by)
			}
		}
		out, err = s.retagStaged(txn, v, key, vid, tags)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retagCurrent stages e, the current version of key with new tags, under
// its own version ID. A version this branch wrote since its last commit
// has its version record rewritten too (no fork can see it yet); the
// record of a committed one stays as history has it.
func (s *Service) retagCurrent(txn kv.Txn, v *view, key string, e *manifest.Entry, by Writer) error {
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

// retagStaged gives new tags to vid, an older version of key that must not
// be history yet.
func (s *Service) retagStaged(txn kv.Txn, v *view, key, vid string, tags []manifest.Pair) (*manifest.Entry, error) {
	if _, err := manifest.ParseCommitID(vid); err == nil {
		return nil, fmt.Errorf("%s as of commit %s: the tags of history cannot change: %w", key, vid, ErrImmutable)
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
		return nil, fmt.Errorf("%s version %s is committed and not current: only the current version's tags can change: %w", key, vid, ErrImmutable)
	}
	e, err := manifest.DecodeEntry(rec.entry)
	if err != nil {
		return nil, err
	}
	e.Tags = tags
	rec.entry = e.Encode()
	return e, txn.Set(versionKey(v.rr.ID, vid), rec.encode())
}

// sameVersion reports whether two encoded entries are one version, alike
// but for their tags (all that SetTags changes).
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
	return bytes.Equal(ea.Encode(), eb.Encode())
}

// sameRecord reports whether the encoded version record old and rec are
// one version's record, alike but for the entry's tags.
func sameRecord(old []byte, rec versionRecord) bool {
	o, err := decodeVersion(old)
	return err == nil && o.key == rec.key && o.branch == rec.branch && o.seq == rec.seq && o.vid == rec.vid &&
		o.del == rec.del && sameVersion(o.entry, rec.entry)
}
