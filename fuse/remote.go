package fuse

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/client"
)

// remote is the gateway as the mount uses it: one repository and branch,
// through the control API and S3. Every call is authorized by path on
// the gateway.
type remote struct {
	c            *client.Client
	repo, branch string
}

func (r *remote) obj(key string) client.Object {
	return client.Object{Repo: r.repo, Branch: r.branch, Key: key}
}

// entry is an object as the control API describes it.
type entry struct {
	Key         string            `json:"key"`
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"`
	VersionID   string            `json:"version_id"`
	ModTime     time.Time         `json:"mod_time"`
	ContentType string            `json:"content_type"`
	Meta        map[string]string `json:"meta"`
}

// moved is e as the gateway holds it after a rename to key: a new version
// vid ("" when unknown) of the same bytes; nil stays nil.
func (e *entry) moved(key, vid string) *entry {
	if e == nil {
		return nil
	}
	m := *e
	m.Key, m.VersionID = key, vid
	return &m
}

// Metadata names (user metadata, x-amz-meta-*).
const (
	metaMode  = "mode"
	metaMtime = "mtime"
)

// mode is the entry's st_mode: its "mode" metadata when it has a type
// (or just permission bits, taken as a regular file), else def.
func (e *entry) mode(def uint32) uint32 {
	if v, ok := e.Meta[metaMode]; ok {
		if m, err := strconv.ParseUint(v, 10, 32); err == nil {
			if m&syscall.S_IFMT == 0 {
				m |= uint64(def & syscall.S_IFMT)
			}
			return uint32(m)
		}
	}
	return def
}

// mtime is the entry's "mtime" metadata (seconds, with an optional
// fraction), else the time the gateway stored it.
func (e *entry) mtime() time.Time {
	if t, ok := parseMtime(e.Meta[metaMtime]); ok {
		return t
	}
	return e.ModTime
}

func parseMtime(v string) (time.Time, bool) {
	if v == "" {
		return time.Time{}, false
	}
	sec, frac, _ := strings.Cut(v, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		frac += strings.Repeat("0", 9-len(frac))
		if ns, err = strconv.ParseInt(frac, 10, 64); err != nil {
			return time.Time{}, false
		}
	}
	return time.Unix(s, ns), true
}

func formatMtime(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10) + "." + strconv.FormatInt(int64(t.Nanosecond())+1e9, 10)[1:]
}

// lookup says what key names: an object, a directory, both or neither.
func (r *remote) lookup(ctx context.Context, key string) (obj *entry, dir, marker bool, err error) {
	var out struct {
		Object *entry `json:"object"`
		Dir    bool   `json:"dir"`
		Marker bool   `json:"marker"`
	}
	err = r.c.Call(ctx, "object/lookup", map[string]any{"repo": r.repo, "branch": r.branch, "key": key}, &out)
	return out.Object, out.Dir, out.Marker, err
}

// page is one page of a directory listing.
type page struct {
	Objects  []entry  `json:"objects"`
	Prefixes []string `json:"prefixes"`
	Next     string   `json:"next_cursor"`
}

func (r *remote) list(ctx context.Context, prefix, cursor string, limit int) (*page, error) {
	var p page
	err := r.c.Call(ctx, "object/list", map[string]any{"repo": r.repo, "branch": r.branch, "prefix": prefix,
		"delimiter": "/", "cursor": cursor, "limit": limit}, &p)
	return &p, err
}

// content is one version of an object with its chunk map.
type content struct {
	entry
	mu     sync.Mutex // guards chunks and mapped
	chunks []chunkAt
	mapped bool // chunks is the chunk map (stat answered)
}

// chunkAt is one chunk of a content: its hash and where it lies.
type chunkAt struct {
	hash chunk.Hash
	off  int64
	size int64
}

// stat opens key (version "" is the current one): it answers the chunk
// map, and for a lease the gateway records the open.
//
// With inlineMax > 0, an object of at most that many bytes comes with its
// bytes (data), which the gateway charged to a lease as a read.
func (r *remote) stat(ctx context.Context, key, version string, inlineMax int64) (*content, []byte, error) {
	var out struct {
		Object struct {
			entry
			Chunks []struct {
				Hash string `json:"hash"`
				Size int64  `json:"size"`
			} `json:"chunks"`
		} `json:"object"`
		Data []byte `json:"data"` // base64 in the answer; null: not inlined
	}
	args := map[string]any{"repo": r.repo, "branch": r.branch, "key": key, "version_id": version}
	if inlineMax > 0 {
		args["inline_max"] = inlineMax
	}
	if err := r.c.Call(ctx, "object/stat", args, &out); err != nil {
		return nil, nil, err
	}
	c := &content{entry: out.Object.entry, mapped: true}
	var off int64
	for _, ch := range out.Object.Chunks {
		h, err := chunk.ParseHash(ch.Hash)
		if err != nil {
			return nil, nil, err
		}
		c.chunks = append(c.chunks, chunkAt{hash: h, off: off, size: ch.Size})
		off += ch.Size
	}
	if off != c.Size {
		return nil, nil, fmt.Errorf("stat %s: chunks of %d bytes for %d: %w", key, off, c.Size, syscall.EIO)
	}
	if out.Data != nil && int64(len(out.Data)) != c.Size {
		return nil, nil, fmt.Errorf("stat %s: %d inline bytes for %d: %w", key, len(out.Data), c.Size, syscall.EIO)
	}
	return c, out.Data, nil
}

// span is a byte range [off, off+n).
type span struct{ off, n int64 }

// reads charges and records ranges of version that the mount serves from
// its own cache; no ranges still asks whether the lease may read key.
func (r *remote) reads(ctx context.Context, key, version string, ranges []span) error {
	rs := make([]map[string]int64, 0, len(ranges))
	for _, s := range ranges {
		rs = append(rs, map[string]int64{"offset": s.off, "length": s.n})
	}
	return r.c.Call(ctx, "object/reads", map[string]any{"repo": r.repo, "branch": r.branch, "key": key, "version_id": version, "ranges": rs}, nil)
}

// piece is one segment of a composed object: a range of an existing
// version, or new bytes.
type piece struct {
	key, version string
	off, n       int64
	data         []byte
}

// compose stores a new version of key made of pieces.
func (r *remote) compose(ctx context.Context, key string, pieces []piece, contentType string, meta map[string]string) (*entry, error) {
	segs := make([]map[string]any, 0, len(pieces))
	for _, p := range pieces {
		if p.data != nil {
			segs = append(segs, map[string]any{"data": base64.StdEncoding.EncodeToString(p.data)})
		} else {
			segs = append(segs, map[string]any{"key": p.key, "version_id": p.version, "offset": p.off, "length": p.n})
		}
	}
	var out struct {
		ETag      string `json:"etag"`
		VersionID string `json:"version_id"`
		Size      int64  `json:"size"`
	}
	err := r.c.Call(ctx, "object/compose", map[string]any{"repo": r.repo, "branch": r.branch, "key": key,
		"segments": segs, "content_type": contentType, "meta": meta}, &out)
	if err != nil {
		return nil, err
	}
	return &entry{Key: key, Size: out.Size, ETag: out.ETag, VersionID: out.VersionID, ContentType: contentType, Meta: meta, ModTime: time.Now()}, nil
}

// rename moves a key (or, with prefix, every key under a directory) and
// returns the moved key's new version ID (none for a directory).
func (r *remote) rename(ctx context.Context, from, to string, prefix, noReplace bool) (string, error) {
	var out struct {
		VersionID string `json:"version_id"`
	}
	err := r.c.Call(ctx, "object/rename", map[string]any{"repo": r.repo, "branch": r.branch, "from": from, "to": to,
		"prefix": prefix, "no_replace": noReplace}, &out)
	return out.VersionID, err
}

// commit commits the branch's staged changes; nothing to commit is fine.
func (r *remote) commit(ctx context.Context, msg string) (string, error) {
	var out struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	err := r.c.Call(ctx, "commit/create", map[string]any{"repo": r.repo, "branch": r.branch, "message": msg}, &out)
	if client.Code(err) == "NothingToCommit" {
		return "", nil
	}
	return out.Commit.ID, err
}
