package fuse

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/client"
)

// remote is the gateway as the mount uses it: one repository and branch,
// through the control API and S3. Every call is authorized by path on
// the gateway.
//
// The mount's keys are relative to prefix: remote adds it to every key it
// sends and strips it from every key it receives, so nothing above it is
// reachable. With at (a commit ID) every read is as of that commit.
type remote struct {
	c            *client.Client
	repo, branch string
	prefix       string // "" or ending in "/"
	at           string // commit ID, or "" for the branch's current state
}

func (r *remote) obj(key string) client.Object {
	return client.Object{Repo: r.repo, Branch: r.branch, Key: r.prefix + key}
}

// strip is a gateway key relative to the prefix.
func (r *remote) strip(key string) string { return strings.TrimPrefix(key, r.prefix) }

// version is the version a read asks for: the commit of an --at mount,
// else v.
func (r *remote) version(v string) string {
	if r.at != "" {
		return r.at
	}
	return v
}

// get reads n bytes of version of key at off (n < 0: to the end); see
// client.Client.Get.
func (r *remote) get(ctx context.Context, key, version string, off, n int64, fn func(io.Reader, client.Info) error) error {
	return r.c.Get(ctx, r.obj(key), r.version(version), off, n, fn)
}

// entry is an object as the control API describes it (apiv1.Object),
// with what the mount reads from it.
type entry struct {
	Key         string            `json:"key"`
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"`
	VersionID   string            `json:"version_id"`
	ModTime     time.Time         `json:"mod_time"`
	ContentType string            `json:"content_type"`
	Meta        map[string]string `json:"meta"`
	Labels      *apiv1.Labels     `json:"labels"`
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
	var out apiv1.ObjectLookupResponse
	err = r.c.Do(ctx, apiv1.ObjectLookupRequest{Repo: r.repo, Branch: r.branch, Key: r.prefix + key, Commit: r.at}, &out)
	if out.Object != nil {
		e := entry(*out.Object)
		e.Key = r.strip(e.Key)
		obj = &e
	}
	return obj, out.Dir, out.Marker, err
}

// page is one page of a directory listing.
type page struct {
	Objects  []entry
	Prefixes []string
	Next     string
}

func (r *remote) list(ctx context.Context, prefix, cursor string, limit int) (*page, error) {
	var out apiv1.ObjectListResponse
	if cursor != "" {
		cursor = r.prefix + cursor
	}
	req := apiv1.ObjectListRequest{Repo: r.repo, Branch: r.branch, Prefix: r.prefix + prefix, Delimiter: "/", Commit: r.at,
		Page: apiv1.Page{Cursor: cursor, Limit: limit}}
	if err := r.c.Do(ctx, req, &out); err != nil {
		return &page{}, err
	}
	p := &page{Prefixes: make([]string, 0, len(out.Prefixes)), Objects: make([]entry, 0, len(out.Objects))}
	if out.NextCursor != "" {
		p.Next = r.strip(out.NextCursor)
	}
	for _, cp := range out.Prefixes {
		p.Prefixes = append(p.Prefixes, r.strip(cp))
	}
	for _, o := range out.Objects {
		e := entry(o)
		e.Key = r.strip(e.Key)
		p.Objects = append(p.Objects, e)
	}
	return p, nil
}

// content is one version of an object with its chunk map.
type content struct {
	entry
	mu     sync.Mutex // guards chunks and mapped
	chunks []chunkAt
	mapped bool // chunks is the chunk map (stat answered)
	// ranged is an object the gateway gives no chunk map of (a sealed
	// one, or a lazy one not yet all local): its bytes are read by range
	// from the gateway and never enter the chunk cache.
	ranged bool
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
	var out apiv1.ObjectStatResponse
	req := apiv1.ObjectStatRequest{ObjectRef: apiv1.ObjectRef{Repo: r.repo, Branch: r.branch, Key: r.prefix + key, VersionID: r.version(version)},
		InlineMax: inlineMax}
	if err := r.c.Do(ctx, req, &out); err != nil {
		return nil, nil, err
	}
	c := &content{entry: entry(out.Object.Object), mapped: true, ranged: out.Object.Sealed || out.Object.Lazy}
	c.Key = key
	var off int64
	for _, ch := range out.Object.Chunks {
		h, err := chunk.ParseHash(ch.Hash)
		if err != nil {
			return nil, nil, err
		}
		c.chunks = append(c.chunks, chunkAt{hash: h, off: off, size: int64(ch.Size)})
		off += int64(ch.Size)
	}
	if off != c.Size && !c.ranged {
		return nil, nil, fmt.Errorf("stat %s: chunks of %d bytes for %d: %w", key, off, c.Size, syscall.EIO)
	}
	var data []byte
	if out.Data != nil {
		var err error
		if data, err = base64.StdEncoding.DecodeString(*out.Data); err != nil || int64(len(data)) != c.Size {
			return nil, nil, fmt.Errorf("stat %s: %d inline bytes for %d: %w", key, len(data), c.Size, syscall.EIO)
		}
	}
	return c, data, nil
}

// span is a byte range [off, off+n).
type span struct{ off, n int64 }

// reads charges and records ranges of version that the mount serves from
// its own cache; no ranges still asks whether the lease may read key.
func (r *remote) reads(ctx context.Context, key, version string, ranges []span) error {
	req := apiv1.ObjectReadsRequest{ObjectRef: apiv1.ObjectRef{Repo: r.repo, Branch: r.branch, Key: r.prefix + key, VersionID: r.version(version)},
		Ranges: make([]apiv1.Range, 0, len(ranges))}
	for _, s := range ranges {
		req.Ranges = append(req.Ranges, apiv1.Range{Offset: s.off, Length: s.n})
	}
	return r.c.Do(ctx, req, nil)
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
	req := apiv1.ObjectComposeRequest{Repo: r.repo, Branch: r.branch, Key: r.prefix + key, ContentType: contentType, Meta: meta,
		Segments: make([]apiv1.Segment, 0, len(pieces))}
	for _, p := range pieces {
		if p.data != nil {
			req.Segments = append(req.Segments, apiv1.Segment{Data: base64.StdEncoding.EncodeToString(p.data)})
		} else {
			req.Segments = append(req.Segments, apiv1.Segment{Key: r.prefix + p.key, VersionID: p.version, Offset: p.off, Length: p.n})
		}
	}
	var out apiv1.ObjectComposeResponse
	err := r.c.Do(ctx, req, &out)
	if err != nil {
		return nil, err
	}
	return &entry{Key: key, Size: out.Size, ETag: out.ETag, VersionID: out.VersionID, ContentType: contentType, Meta: meta, ModTime: time.Now()}, nil
}

// rename moves a key (or, with prefix, every key under a directory) and
// returns the moved key's new version ID (none for a directory).
func (r *remote) rename(ctx context.Context, from, to string, prefix, noReplace bool) (string, error) {
	var out apiv1.ObjectRenameResponse
	err := r.c.Do(ctx, apiv1.ObjectRenameRequest{Repo: r.repo, Branch: r.branch, From: r.prefix + from, To: r.prefix + to, Prefix: prefix, NoReplace: noReplace}, &out)
	return out.VersionID, err
}

// commit commits the branch's staged changes; nothing to commit is fine.
func (r *remote) commit(ctx context.Context, msg string) (string, error) {
	var out apiv1.CommitResponse
	err := r.c.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: r.branch, Message: msg}, &out)
	if client.Code(err) == apiv1.CodeNothingToCommit {
		return "", nil
	}
	return out.Commit.ID, err
}
