package branch

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// Upload is an open multipart upload. It is bound to the branch named when
// it was created.
type Upload struct {
	ID       string          `json:"id"`
	Key      string          `json:"key"`
	Branch   string          `json:"branch"`
	BranchID uint64          `json:"branch_id"`
	Created  int64           `json:"created"`
	Entry    *manifest.Entry `json:"-"` // headers, metadata and checksum settings
	EntryB   []byte          `json:"entry"`
}

// PartInfo is one uploaded part.
type PartInfo struct {
	Number int
	Entry  *manifest.Entry // size, ETag, checksum, content
}

// CreateUpload starts a multipart upload of key on a branch; meta carries
// the object's headers, metadata and checksum algorithm and type.
func (s *Service) CreateUpload(ctx context.Context, repo, branch, key string, meta *manifest.Entry) (*Upload, error) {
	if err := ValidKey(key); err != nil {
		return nil, err
	}
	var up *Upload
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		v, err := s.writableView(ctx, txn, repo, branch)
		if err != nil {
			return err
		}
		var id [16]byte
		binary.BigEndian.PutUint64(id[:8], s.clk.next())
		binary.BigEndian.PutUint64(id[8:], rand.Uint64())
		up = &Upload{ID: hex.EncodeToString(id[:]), Key: key, Branch: v.br.Name, BranchID: v.br.ID,
			Created: time.Now().UnixNano(), Entry: meta, EntryB: meta.Encode()}
		b, _ := json.Marshal(up)
		return txn.Set(uploadKey(v.rr.ID, key, up.ID), b)
	})
	return up, err
}

func (s *Service) upload(r kv.Reader, rr *repoRecord, key, id string) (*Upload, error) {
	b, err := r.Get(uploadKey(rr.ID, key, id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("upload %s of %s: %w", id, key, ErrNoSuchUpload)
	}
	if err != nil {
		return nil, err
	}
	return decodeUpload(b)
}

func decodeUpload(b []byte) (*Upload, error) {
	var up Upload
	if err := json.Unmarshal(b, &up); err != nil {
		return nil, fmt.Errorf("upload record: %w", err)
	}
	e, err := manifest.DecodeEntry(up.EntryB)
	if err != nil {
		return nil, err
	}
	up.Entry = e
	return &up, nil
}

// GetUpload returns an open upload.
func (s *Service) GetUpload(ctx context.Context, repo, key, id string) (*Upload, error) {
	var up *Upload
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		up, err = s.upload(r, rr, key, id)
		return err
	})
	return up, err
}

// PutPart records part n of an upload (replacing an earlier upload of the
// same number) atomically with recs (its chunks).
func (s *Service) PutPart(ctx context.Context, repo, key, id string, n int, part *manifest.Entry, recs ...Recorder) error {
	if n < 1 || n > 10000 {
		return fmt.Errorf("part number %d: must be 1-10000: %w", n, ErrInvalidPart)
	}
	recs, done := s.enterWrite(recs)
	defer done()
	return s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		if _, err := s.upload(txn, rr, key, id); err != nil {
			return err
		}
		if err := txn.Set(partKey(rr.ID, id, n), part.Encode()); err != nil {
			return err
		}
		for _, r := range recs {
			if err := r.Record(txn); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListParts returns up to max parts of an upload with numbers above after.
func (s *Service) ListParts(ctx context.Context, repo, key, id string, after, max int) (parts []PartInfo, truncated bool, err error) {
	err = s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		if _, err := s.upload(r, rr, key, id); err != nil {
			return err
		}
		pre := partPrefix(rr.ID, id)
		rng := kv.Prefix(pre)
		rng.Start = partKey(rr.ID, id, after+1)
		return r.Scan(rng, func(k, v []byte) error {
			if len(parts) >= max {
				truncated = true
				return kv.ErrStop
			}
			e, err := manifest.DecodeEntry(v)
			if err != nil {
				return err
			}
			parts = append(parts, PartInfo{Number: int(binary.BigEndian.Uint32(k[len(pre):])), Entry: e})
			return nil
		})
	})
	return parts, truncated, err
}

// Parts loads the named parts of an upload, in the given order.
func (s *Service) Parts(ctx context.Context, repo, key, id string, numbers []int) ([]PartInfo, error) {
	out := make([]PartInfo, 0, len(numbers))
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		if _, err := s.upload(r, rr, key, id); err != nil {
			return err
		}
		for _, n := range numbers {
			v, err := r.Get(partKey(rr.ID, id, n))
			if errors.Is(err, kv.ErrNotFound) {
				return fmt.Errorf("part %d of upload %s: %w", n, id, ErrInvalidPart)
			}
			if err != nil {
				return err
			}
			e, err := manifest.DecodeEntry(v)
			if err != nil {
				return err
			}
			out = append(out, PartInfo{Number: n, Entry: e})
		}
		return nil
	})
	return out, err
}

// CompleteUpload stages e (built by the caller from the upload's parts) as
// the new version of the upload's key on the upload's branch, and ends the
// upload, in one transaction.
func (s *Service) CompleteUpload(ctx context.Context, repo, key, id string, e *manifest.Entry, cond Condition, recs ...Recorder) (*manifest.Entry, error) {
	if err := validSize(e); err != nil {
		return nil, err
	}
	out := *e
	var rrID uint64
	recs, done := s.enterWrite(recs)
	defer done()
	var q *quotaTxn
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		q.release()
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		rrID = rr.ID
		up, err := s.upload(txn, rr, key, id)
		if err != nil {
			return err
		}
		v, err := s.writableView(ctx, txn, repo, up.Branch)
		if err != nil {
			return err
		}
		if v.br.ID != up.BranchID {
			return fmt.Errorf("branch %s was deleted after upload %s began: %w", up.Branch, id, ErrNoSuchUpload)
		}
		cur, err := s.lookup(ctx, txn, v, key)
		if err != nil {
			return err
		}
		if err := cond.check(key, cur); err != nil {
			return err
		}
		seq := s.clk.next()
		out.VersionID = newVersionID(seq, rand.Uint32())
		out.ModTime = time.Now().UnixNano()
		enc := out.Encode()
		if q, err = s.quotaFor(ctx, txn, v); err != nil {
			return err
		}
		if err := q.change(cur.entry, enc); err != nil {
			return err
		}
		if err := s.stage(txn, v, key, staged{seq: seq, vid: out.VersionID, entry: enc, by: cond.By}); err != nil {
			return err
		}
		if err := s.noteScratch(txn, v, key, &out); err != nil {
			return err
		}
		for _, r := range recs {
			if err := r.Record(txn); err != nil {
				return err
			}
		}
		return txn.Delete(uploadKey(rr.ID, key, id))
	})
	if err != nil {
		q.release()
		return nil, err
	}
	if err := s.deleteRange(ctx, kv.Prefix(partPrefix(rrID, id))); err != nil {
		s.log.Warn("clearing completed upload parts", "upload", id, "err", err)
	}
	return &out, nil
}

// AbortUpload ends an upload and discards its parts.
func (s *Service) AbortUpload(ctx context.Context, repo, key, id string) error {
	var rrID uint64
	err := s.db.Update(ctx, func(txn kv.Txn) error {
		rr, err := s.repo(txn, repo)
		if err != nil {
			return err
		}
		rrID = rr.ID
		if _, err := s.upload(txn, rr, key, id); err != nil {
			return err
		}
		return txn.Delete(uploadKey(rr.ID, key, id))
	})
	if err != nil {
		return err
	}
	return s.deleteRange(ctx, kv.Prefix(partPrefix(rrID, id)))
}

// UploadListOptions selects a page of ListUploads.
type UploadListOptions struct {
	Prefix         string
	Delimiter      string
	KeyMarker      string
	UploadIDMarker string
	MaxUploads     int
	// Branch, when set, lists only uploads bound to that branch.
	Branch string
	// Filter, when set, hides uploads of keys it does not match.
	Filter *Filter
}

// UploadListResult is one page of ListUploads.
type UploadListResult struct {
	Uploads            []Upload
	CommonPrefixes     []string
	Truncated          bool
	NextKeyMarker      string
	NextUploadIDMarker string
}

// ListUploads lists open uploads by key, then by creation.
func (s *Service) ListUploads(ctx context.Context, repo string, o UploadListOptions) (*UploadListResult, error) {
	res := &UploadListResult{}
	err := s.db.View(ctx, func(r kv.Reader) error {
		rr, err := s.repo(r, repo)
		if err != nil {
			return err
		}
		base := uploadsPrefix(rr.ID)
		esc := escKey(append([]byte(nil), base...), o.Prefix)
		rng := kv.Prefix(esc[:len(esc)-2])
		if o.KeyMarker != "" {
			start := escKey(append([]byte(nil), base...), o.KeyMarker)
			if o.UploadIDMarker != "" {
				start = append(append(start, o.UploadIDMarker...), 0)
			} else {
				start = kv.PrefixEnd(start)
			}
			if bytes.Compare(start, rng.Start) > 0 {
				rng.Start = start
			}
		}
		lastCP := ""
		return r.Scan(rng, func(k, v []byte) error {
			key, _, ok := unescKey(k[len(base):])
			if !ok {
				return nil
			}
			up, err := decodeUpload(v)
			if err != nil {
				return err
			}
			if o.Branch != "" && up.Branch != o.Branch || !o.Filter.match(key) {
				return nil
			}
			if o.Delimiter != "" {
				if i := strings.Index(key[len(o.Prefix):], o.Delimiter); i >= 0 {
					cp := key[:len(o.Prefix)+i+len(o.Delimiter)]
					if cp == lastCP || (o.KeyMarker != "" && cp <= o.KeyMarker && strings.HasPrefix(o.KeyMarker, cp)) {
						return nil
					}
					if len(res.Uploads)+len(res.CommonPrefixes) >= o.MaxUploads {
						res.Truncated = true
						return kv.ErrStop
					}
					lastCP = cp
					res.CommonPrefixes = append(res.CommonPrefixes, cp)
					res.NextKeyMarker, res.NextUploadIDMarker = cp, ""
					return nil
				}
			}
			if len(res.Uploads)+len(res.CommonPrefixes) >= o.MaxUploads {
				res.Truncated = true
				return kv.ErrStop
			}
			res.Uploads = append(res.Uploads, *up)
			res.NextKeyMarker, res.NextUploadIDMarker = up.Key, up.ID
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if !res.Truncated {
		res.NextKeyMarker, res.NextUploadIDMarker = "", ""
	}
	return res, nil
}
