package api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// Object operations for file-system clients (the mount): what S3 lacks.
// Every one is authorized by path, like S3: there is no operation that
// answers "is chunk H present?", for reads or writes.

// ChunkJSON is one chunk of an object's content.
type ChunkJSON struct {
	Hash string `json:"hash"`
	Size uint32 `json:"size"`
}

// StatJSON describes an object with its chunk map.
type StatJSON struct {
	EntryJSON
	Commit string      `json:"commit"` // the branch head the stat was taken at
	Chunks []ChunkJSON `json:"chunks"`
}

// statOf describes e with its chunk map, as seen at commit head.
func statOf(key string, e *manifest.Entry, head string, refs []chunk.Ref) StatJSON {
	st := StatJSON{EntryJSON: entryJSON(key, e), Commit: head, Chunks: make([]ChunkJSON, 0, len(refs))}
	for _, r := range refs {
		st.Chunks = append(st.Chunks, ChunkJSON{Hash: r.Hash.String(), Size: r.Size})
	}
	return st
}

// objectArgs names an object on a branch.
type objectArgs struct {
	Repo      string `json:"repo"`
	Branch    string `json:"branch"`
	Key       string `json:"key"`
	VersionID string `json:"version_id"`
}

// target applies a lease to (repo, branch): the lease's branch by default;
// any other repository or branch does not exist for it.
func target(c *call, repo, br string) (string, error) {
	l := c.lease
	if l == nil {
		if br == "" {
			br = branch.DefaultBranch
		}
		return br, nil
	}
	if br == "" {
		br = l.Branch
	}
	if repo != l.Repo || br != l.Branch {
		return "", notFound("no branch " + br + " in " + repo)
	}
	return br, nil
}

// authorize asks the lease check for action a on key.
func (h *Handler) authorize(ctx context.Context, c *call, a lease.Action, repo, br, key string) error {
	l := c.lease
	if l == nil {
		return nil
	}
	v := l.Check(a, repo, br, key, time.Now())
	if v.Decision == lease.Allow && v.SingleUseGrant != "" && !c.consumed[v.SingleUseGrant] {
		if _, err := h.leases.ConsumeGrant(ctx, l.ID, v.SingleUseGrant); err != nil {
			v = lease.Verdict{Decision: lease.NotFound, Rule: "single-use grant already used or expired"}
		} else {
			if c.consumed == nil {
				c.consumed = map[string]bool{}
			}
			c.consumed[v.SingleUseGrant] = true
		}
	}
	switch v.Decision {
	case lease.Allow:
		return nil
	case lease.NotFound:
		if h.onDeny != nil {
			h.onDeny(ctx, l, string(a), repo, br, key, v)
		}
		return notFound("no such key " + key)
	default:
		if h.onDeny != nil {
			h.onDeny(ctx, l, string(a), repo, br, key, v)
		}
		return denied("the lease does not grant " + string(a) + " on " + key)
	}
}

func quota(msg string) error {
	return &Error{Status: http.StatusForbidden, Code: "QuotaExceeded", Message: msg}
}

func (h *Handler) entryAt(ctx context.Context, repo, br, key, vid string) (*manifest.Entry, error) {
	if vid == "" {
		return h.b.Get(ctx, repo, br, key)
	}
	e, marker, err := h.b.GetVersion(ctx, repo, br, key, vid)
	if err != nil {
		return nil, err
	}
	if marker {
		return nil, fmt.Errorf("%s@%s is a delete marker: %w", key, vid, branch.ErrNoSuchKey)
	}
	return e, nil
}

// objectStat returns an object's entry and chunk map; for a lease it is an
// open, recorded in the run's read manifest.
func (h *Handler) objectStat(ctx context.Context, c *call) (any, error) {
	var a statArgs
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := target(c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.Read, a.Repo, br, a.Key); err != nil {
		return nil, err
	}
	e, err := h.entryAt(ctx, a.Repo, br, a.Key, a.VersionID)
	if err != nil {
		return nil, err
	}
	content, err := h.contentOf(ctx, e)
	if err != nil {
		return nil, err
	}
	b, err := h.b.GetBranch(ctx, a.Repo, br)
	if err != nil {
		return nil, err
	}
	st := statOf(a.Key, e, b.Head.String(), content.Chunks)
	if c.lease != nil && h.onRead != nil {
		h.onRead(ctx, c.lease, a.Repo, br, a.Key, e, 0, 0)
	}
	out := map[string]any{"object": st}
	if err := h.inline(ctx, c, a, br, e, content.Chunks, out); err != nil {
		return nil, err
	}
	return out, nil
}

// statArgs are object/stat's arguments: an object, and the size up to
// which its bytes come inline in the answer (saving a small file's GET).
type statArgs struct {
	objectArgs
	InlineMax int64 `json:"inline_max"`
}

// maxInline bounds the bytes object/stat returns inline.
const maxInline = 256 << 10

// inline adds the object's bytes to a stat answer (field "data", base64)
// when it is at most a.InlineMax bytes. For a lease they are a read like
// a GET's: charged to the budget and recorded; a budget that does not
// cover them leaves them out (the client's GET then answers the quota).
func (h *Handler) inline(ctx context.Context, c *call, a statArgs, br string, e *manifest.Entry, refs []chunk.Ref, out map[string]any) error {
	if a.InlineMax <= 0 || e.Size > min(a.InlineMax, maxInline) {
		return nil
	}
	var buf bytes.Buffer
	for _, r := range refs {
		if err := h.b.Chunks().Read(ctx, &buf, r.Hash, 0, int64(r.Size)); err != nil {
			return err
		}
	}
	if l := c.lease; l != nil {
		if v := h.leases.ReserveRead(ctx, l, e.Size); v.Decision != lease.Allow {
			return nil
		}
		if h.onRead != nil && e.Size > 0 {
			h.onRead(ctx, l, a.Repo, br, a.Key, e, 0, e.Size)
		}
	}
	out["data"] = base64.StdEncoding.EncodeToString(buf.Bytes())
	return nil
}

// objectReads tells the gateway that a client read ranges of an object
// from its own chunk cache: the lease is authorized, charged and the
// ranges recorded exactly as if the bytes had come over S3.
func (h *Handler) objectReads(ctx context.Context, c *call) (any, error) {
	var a struct {
		objectArgs
		Ranges []struct {
			Offset int64 `json:"offset"`
			Length int64 `json:"length"`
		} `json:"ranges"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := target(c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.Read, a.Repo, br, a.Key); err != nil {
		return nil, err
	}
	e, err := h.entryAt(ctx, a.Repo, br, a.Key, a.VersionID)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, r := range a.Ranges {
		if r.Offset < 0 || r.Length < 0 || r.Offset+r.Length > e.Size {
			return nil, &Error{Status: 416, Code: "InvalidRange", Message: fmt.Sprintf("range %d+%d outside %d bytes", r.Offset, r.Length, e.Size)}
		}
		total += r.Length
	}
	if l := c.lease; l != nil {
		if v := h.leases.ReserveRead(ctx, l, total); v.Decision != lease.Allow {
			return nil, quota(v.Rule)
		}
		if h.onRead != nil {
			for _, r := range a.Ranges {
				h.onRead(ctx, l, a.Repo, br, a.Key, e, r.Offset, r.Length)
			}
		}
		return map[string]any{"charged": total, "remaining": remainingJSON(h.leases.Remaining(ctx, l))}, nil
	}
	return map[string]any{"charged": total}, nil
}

// maxComposeData bounds the new bytes one compose carries inline.
const maxComposeData = 16 << 20

// segment is one piece of a composed object: a range of an existing object
// or new bytes.
type segment struct {
	Key       string `json:"key"`
	VersionID string `json:"version_id"`
	Offset    int64  `json:"offset"`
	Length    int64  `json:"length"`
	Data      string `json:"data"` // base64 new bytes, instead of key
}

// objectCompose builds a new version of key from ranges of existing objects
// and new bytes, so a small edit to a large file moves only the edited
// bytes: whole chunks inside a range are shared, partial chunks at range
// edges are rewritten. Its ETag is the MD5 of the chunk hashes with a "-N"
// suffix (like a multipart upload, not an MD5 of the content).
func (h *Handler) objectCompose(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo        string            `json:"repo"`
		Branch      string            `json:"branch"`
		Key         string            `json:"key"`
		Segments    []segment         `json:"segments"`
		ContentType string            `json:"content_type"`
		Meta        map[string]string `json:"meta"`
		IfMatch     string            `json:"if_match"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := target(c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.Write, a.Repo, br, a.Key); err != nil {
		return nil, err
	}
	up := h.b.Chunks().NewUpload()
	defer up.Close()
	var refs []chunk.Ref
	var size, inline int64
	for i, sg := range a.Segments {
		if sg.Key == "" {
			data, err := base64.StdEncoding.DecodeString(sg.Data)
			if err != nil {
				return nil, &Error{Status: 400, Code: "InvalidArgument", Message: fmt.Sprintf("segment %d: data is not base64", i)}
			}
			if inline += int64(len(data)); inline > maxComposeData {
				return nil, &Error{Status: 400, Code: "InvalidArgument", Message: "more than 16 MiB of new data in one compose; upload large data with PUT"}
			}
			rs, n, err := up.Ingest(ctx, bytes.NewReader(data))
			if err != nil {
				return nil, err
			}
			refs, size = append(refs, rs...), size+n
			continue
		}
		if err := h.authorize(ctx, c, lease.Read, a.Repo, br, sg.Key); err != nil {
			return nil, err
		}
		e, err := h.entryAt(ctx, a.Repo, br, sg.Key, sg.VersionID)
		if err != nil {
			return nil, err
		}
		if sg.Offset < 0 || sg.Length < 0 || sg.Offset+sg.Length > e.Size {
			return nil, &Error{Status: 416, Code: "InvalidRange", Message: fmt.Sprintf("segment %d: %d+%d outside %s (%d bytes)", i, sg.Offset, sg.Length, sg.Key, e.Size)}
		}
		content, err := h.contentOf(ctx, e)
		if err != nil {
			return nil, err
		}
		rs, err := h.sliceContent(ctx, up, content, sg.Offset, sg.Length)
		if err != nil {
			return nil, err
		}
		refs, size = append(refs, rs...), size+sg.Length
	}
	if l := c.lease; l != nil {
		if v := h.leases.ReserveWrite(ctx, l, up.NewBytes()); v.Decision != lease.Allow {
			return nil, quota(v.Rule)
		}
	}
	if err := up.Sync(ctx); err != nil {
		return nil, err
	}
	sum := md5.New()
	for _, r := range refs {
		sum.Write(r.Hash[:])
	}
	e := &manifest.Entry{Size: size, ETag: hex.EncodeToString(sum.Sum(nil)) + "-" + strconv.Itoa(len(refs)), ContentType: a.ContentType}
	if e.ContentType == "" {
		e.ContentType = "binary/octet-stream"
	}
	e.Meta = sortedMeta(a.Meta)
	if len(refs) == 0 {
		e.ETag = "d41d8cd98f00b204e9800998ecf8427e" // MD5 of nothing
	}
	ch, data := e.SetContent(&manifest.Content{Chunks: refs})
	stored, err := h.b.Put(ctx, a.Repo, br, a.Key, e, branch.Condition{IfMatch: a.IfMatch}, up, branch.ContentRecord{Hash: ch, Data: data})
	if err != nil {
		return nil, err
	}
	return map[string]any{"etag": stored.ETag, "version_id": stored.VersionID, "size": stored.Size, "new_bytes": up.NewBytes()}, nil
}

// sliceContent returns chunks covering [off, off+n) of content: whole
// chunks shared, edge pieces stored as new chunks.
func (h *Handler) sliceContent(ctx context.Context, up *cas.Upload, c *manifest.Content, off, n int64) ([]chunk.Ref, error) {
	var out []chunk.Ref
	var pos int64
	end := off + n
	for _, r := range c.Chunks {
		sz := int64(r.Size)
		if pos+sz <= off || pos >= end {
			pos += sz
			continue
		}
		from, to := max(off-pos, 0), min(end-pos, sz)
		if from == 0 && to == sz {
			up.Pin([]chunk.Ref{r})
			out = append(out, r)
		} else {
			var buf bytes.Buffer
			if err := h.b.Chunks().Read(ctx, &buf, r.Hash, from, to-from); err != nil {
				return nil, err
			}
			nr, err := up.Put(ctx, buf.Bytes())
			if err != nil {
				return nil, err
			}
			out = append(out, nr)
		}
		pos += sz
	}
	return out, nil
}

// objectRename renames a key, or with prefix set every key under a
// "directory", moving no bytes. A single key moves atomically; a prefix
// moves in batches and the answer says whether it was atomic.
func (h *Handler) objectRename(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo      string `json:"repo"`
		Branch    string `json:"branch"`
		From      string `json:"from"`
		To        string `json:"to"`
		Prefix    bool   `json:"prefix"`
		NoReplace bool   `json:"no_replace"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := target(c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	check := func(from, to string) error {
		for _, p := range []struct {
			a   lease.Action
			key string
		}{{lease.Read, from}, {lease.Delete, from}, {lease.Write, to}} {
			if err := h.authorize(ctx, c, p.a, a.Repo, br, p.key); err != nil {
				return err
			}
		}
		return nil
	}
	if !a.Prefix {
		if err := check(a.From, a.To); err != nil {
			return nil, err
		}
		e, err := h.b.Rename(ctx, a.Repo, br, a.From, a.To, a.NoReplace)
		if err != nil {
			return nil, err
		}
		return map[string]any{"renamed": 1, "atomic": true, "version_id": e.VersionID}, nil
	}
	// For a directory, keys outside a lease's view stay where they are;
	// a visible key whose new name the lease may not write stops the
	// rename (before the batch holding it moves), so nothing is moved to
	// a hidden name or silently left behind.
	res, err := h.b.RenamePrefix(ctx, a.Repo, br, a.From, a.To, func(from, to string) error {
		if err := h.authorize(ctx, c, lease.Read, a.Repo, br, from); err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code == "NotFound" {
				return branch.ErrNoSuchKey
			}
			return err
		}
		return check(from, to)
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"renamed": res.Renamed, "atomic": res.Atomic}, nil
}
