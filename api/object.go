package api

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/secret"
)

// Object operations for file-system clients (the mount): what S3 lacks.
// Every one is authorized by path, like S3: there is no operation that
// answers "is chunk H present?", for reads or writes.

// target applies the caller to (repo, br): a lease's branch by default,
// the repository's default branch for the owner; a repository or branch
// outside a lease does not exist for it (recorded by the door).
func (h *Handler) target(ctx context.Context, c *call, repo, br string) (string, error) {
	br = c.p.Branch(repo, br)
	if c.p.Outside(repo, br) {
		return "", h.auth.Authorize(ctx, c.p, lease.Read, auth.Target{Repo: repo, Branch: br})
	}
	if br == "" {
		br = branch.DefaultBranch
	}
	return br, nil
}

// authorize asks the door whether the caller may do a on key.
func (h *Handler) authorize(ctx context.Context, c *call, a lease.Action, repo, br, key string) error {
	return h.auth.Authorize(ctx, c.p, a, auth.Target{Repo: repo, Branch: br, Key: key})
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
// open (a probe: a single-use grant is left for the read), recorded in the
// run's read manifest. A lazy entry is made local first.
func (h *Handler) objectStat(ctx context.Context, c *call, a *apiv1.ObjectStatRequest) (*apiv1.ObjectStatResponse, error) {
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	t := auth.Target{Repo: a.Repo, Branch: br, Key: a.Key}
	if err := h.auth.Probe(ctx, c.p, t); err != nil {
		return nil, err
	}
	e, err := h.entryAt(ctx, a.Repo, br, a.Key, a.VersionID)
	if err != nil {
		return nil, err
	}
	if err := h.auth.Ceiling(ctx, c.p, t, e); err != nil {
		return nil, err
	}
	content, err := h.statContent(ctx, e, a.InlineMax)
	if err != nil {
		return nil, err
	}
	b, err := h.b.GetBranch(ctx, a.Repo, br)
	if err != nil {
		return nil, err
	}
	at := b.Head.String()
	if id, err := manifest.ParseCommitID(a.VersionID); err == nil {
		at = id.String() // read at a commit: the answer, and the read manifest, are as of it
		t.Commit = at
	}
	out := &apiv1.ObjectStatResponse{Object: statOut(a.Key, e, at, content)}
	if _, err := h.auth.Read(ctx, c.p, t, e); err != nil {
		return nil, err
	}
	if out.Data, err = h.inline(ctx, c, a, t, e, content); err != nil {
		return nil, err
	}
	return out, nil
}

// inline returns the object's bytes (base64) for a stat answer when it is
// at most a.InlineMax bytes. For a lease they are a read like a GET's:
// authorized as one (a single-use grant is used here), charged to the
// budget and recorded; a budget that does not cover them leaves them out
// (the client's GET then answers the quota).
func (h *Handler) inline(ctx context.Context, c *call, a *apiv1.ObjectStatRequest, t auth.Target, e *manifest.Entry, content *manifest.Content) (*string, error) {
	if a.InlineMax <= 0 || e.Size > min(a.InlineMax, apiv1.MaxInline) || content == nil || content.Seal != nil {
		return nil, nil // a sealed object's bytes go by GET only, never into a client's chunk cache
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Read, t); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := h.b.ReadContent(ctx, &buf, content, 0, e.Size); err != nil {
		return nil, err
	}
	var rs []auth.Range
	if e.Size > 0 {
		rs = append(rs, auth.Range{Len: e.Size})
	}
	if _, err := h.auth.Read(ctx, c.p, t, e, rs...); errors.Is(err, auth.ErrOverBudget) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	data := base64.StdEncoding.EncodeToString(buf.Bytes())
	return &data, nil
}

// checkRange refuses a range that is negative or reaches past size bytes;
// the comparison cannot overflow.
func checkRange(what string, off, n, size int64) error {
	if off < 0 || n < 0 || off > size || n > size-off {
		return &Error{Status: http.StatusRequestedRangeNotSatisfiable, Code: apiv1.CodeInvalidRange,
			Message: fmt.Sprintf("%s: range of %d bytes at %d is outside the object's %d bytes", what, n, off, size)}
	}
	return nil
}

// objectReads tells the gateway that a client read ranges of an object
// from its own chunk cache: the lease is authorized, charged and the
// ranges recorded exactly as if the bytes had come over S3.
func (h *Handler) objectReads(ctx context.Context, c *call, a *apiv1.ObjectReadsRequest) (*apiv1.ObjectReadsResponse, error) {
	if len(a.Ranges) > apiv1.MaxRanges {
		return nil, invalid(fmt.Sprintf("at most %d ranges per call", apiv1.MaxRanges))
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	t := auth.Target{Repo: a.Repo, Branch: br, Key: a.Key}
	if err := h.auth.Authorize(ctx, c.p, lease.Read, t); err != nil {
		return nil, err
	}
	e, err := h.entryAt(ctx, a.Repo, br, a.Key, a.VersionID)
	if err != nil {
		return nil, err
	}
	if err := h.auth.Ceiling(ctx, c.p, t, e); err != nil {
		return nil, err // before a range is checked against its size
	}
	rs := make([]auth.Range, 0, len(a.Ranges))
	out := &apiv1.ObjectReadsResponse{}
	for i, r := range a.Ranges {
		if err := checkRange(fmt.Sprintf("range %d", i), r.Offset, r.Length, e.Size); err != nil {
			return nil, err
		}
		rs = append(rs, auth.Range{Off: r.Offset, Len: r.Length})
		out.Charged += r.Length // each at most e.Size, at most MaxRanges of them: no overflow
	}
	if _, err := h.auth.Read(ctx, c.p, t, e, rs...); err != nil {
		return nil, err
	}
	if !c.p.IsOwner() {
		r := remainingOut(h.auth.Remaining(ctx, c.p))
		out.Remaining = &r
	}
	return out, nil
}

// objectCompose builds a new version of key from ranges of existing objects
// and new bytes, so a small edit to a large file moves only the edited
// bytes: whole chunks inside a range are shared, partial chunks at range
// edges are rewritten. Its ETag is the MD5 of the chunk hashes with a "-N"
// suffix (like a multipart upload, not an MD5 of the content).
func (h *Handler) objectCompose(ctx context.Context, c *call, a *apiv1.ObjectComposeRequest) (*apiv1.ObjectComposeResponse, error) {
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	dst := auth.Target{Repo: a.Repo, Branch: br, Key: a.Key}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, dst); err != nil {
		return nil, err
	}
	if err := checkMeta(a.ContentType, a.Meta); err != nil {
		return nil, err
	}
	plan, err := h.planCompose(ctx, c, a.Repo, br, a.Segments)
	if err != nil {
		return nil, err
	}
	if err := h.composeRetention(ctx, c, a, plan); err != nil {
		return nil, err
	}
	// Charged like an upload (or CopyObject) of the whole result, before
	// anything is stored: whole chunks it shares cost the same as new ones.
	charge, err := h.auth.Copy(ctx, c.p, dst, plan.size, plan.sources...)
	if err != nil {
		return nil, err
	}
	if plan.label, err = h.auth.DerivedLabel(ctx, c.p, plan.sources...); err != nil {
		charge.Refund(ctx)
		return nil, err
	}
	if err := h.scanCompose(ctx, plan); err != nil {
		charge.Refund(ctx)
		return nil, err
	}
	cond, err := h.auth.Condition(ctx, c.p, dst, branch.Condition{IfMatch: a.IfMatch})
	if err != nil {
		charge.Refund(ctx)
		return nil, err
	}
	stored, newBytes, err := h.compose(ctx, dst, plan, a, cond)
	if err != nil {
		charge.Refund(ctx)
		return nil, err
	}
	return &apiv1.ObjectComposeResponse{ETag: stored.ETag, VersionID: stored.VersionID, Size: stored.Size, NewBytes: newBytes}, nil
}

// maxComposeRefs bounds the chunk references of a composed object.
const maxComposeRefs = 1 << 22

// composePlan is a compose whose segments were checked: each source
// segment resolved to its entry and content, each data segment decoded.
type composePlan struct {
	pieces  []composePiece
	sources []auth.Source
	size    int64
	label   *label.Label // the union of the sources' and the writer's
	// retention is the result's class and domain its key domain when it
	// is sealed: by the repository's rules, or that of a sealed source.
	retention, domain string
}

type composePiece struct {
	data    []byte            // new bytes, or
	content *manifest.Content // a range of an existing version's content
	off, n  int64
}

// planCompose checks every segment before anything is written: the
// caller may read each source, each range lies inside its object, and the
// result stays within the bounds (segments, new bytes, 5 TiB).
func (h *Handler) planCompose(ctx context.Context, c *call, repo, br string, segs []apiv1.Segment) (*composePlan, error) {
	if len(segs) > apiv1.MaxSegments {
		return nil, invalid(fmt.Sprintf("at most %d segments in one compose", apiv1.MaxSegments))
	}
	plan := &composePlan{}
	var inline int64
	for i, sg := range segs {
		var pc composePiece
		var err error
		if sg.Key == "" {
			pc, err = dataPiece(i, sg, apiv1.MaxComposeData-inline)
			inline += pc.n
		} else {
			var src auth.Source
			pc, src, err = h.rangePiece(ctx, c, repo, br, i, sg)
			plan.sources = append(plan.sources, src)
		}
		if err != nil {
			return nil, err
		}
		if pc.n > manifest.MaxSize-plan.size {
			return nil, &Error{Status: http.StatusBadRequest, Code: "EntityTooLarge", Message: "the composed object would exceed 5 TiB"}
		}
		plan.size += pc.n
		plan.pieces = append(plan.pieces, pc)
	}
	return plan, nil
}

// scanCompose labels the plan secret when the scanner finds credentials
// in its new bytes (all of them, at most MaxComposeData) or across a
// joint between pieces. A source range is read only at its ends
// (secret.Edge bytes each, the whole range when short): its middle
// carries its source's label already.
func (h *Handler) scanCompose(ctx context.Context, plan *composePlan) error {
	sc := secret.New()
	for _, pc := range plan.pieces {
		var err error
		switch {
		case pc.content == nil:
			sc.Write(pc.data)
		case pc.n <= 2*secret.Edge:
			err = h.readContent(ctx, sc, pc.content, pc.off, pc.n)
		default:
			err = h.readContent(ctx, sc, pc.content, pc.off, secret.Edge)
			sc.Gap()
			if err == nil {
				err = h.readContent(ctx, sc, pc.content, pc.off+pc.n-secret.Edge, secret.Edge)
			}
		}
		if err != nil {
			return fmt.Errorf("scan compose: %w", err)
		}
	}
	if sc.Found() {
		l := label.Raise(label.Of(plan.label), "", label.Secret)
		plan.label = &l
	}
	return nil
}

// readContent writes [off, off+n) of c's plaintext to w.
func (h *Handler) readContent(ctx context.Context, w io.Writer, c *manifest.Content, off, n int64) error {
	return h.b.ReadContent(ctx, w, c, off, n)
}

// dataPiece decodes a segment of new bytes, refusing more than room.
func dataPiece(i int, sg apiv1.Segment, room int64) (composePiece, error) {
	if int64(base64.StdEncoding.DecodedLen(len(sg.Data))) > room {
		return composePiece{}, invalid("more than 16 MiB of new data in one compose; upload large data with PUT")
	}
	data, err := base64.StdEncoding.DecodeString(sg.Data)
	if err != nil {
		return composePiece{}, invalid(fmt.Sprintf("segment %d: data is not base64", i))
	}
	return composePiece{data: data, n: int64(len(data))}, nil
}

// rangePiece resolves a segment that is a range of an existing version.
func (h *Handler) rangePiece(ctx context.Context, c *call, repo, br string, i int, sg apiv1.Segment) (composePiece, auth.Source, error) {
	t := auth.Target{Repo: repo, Branch: br, Key: sg.Key}
	if err := h.auth.Authorize(ctx, c.p, lease.Read, t); err != nil {
		return composePiece{}, auth.Source{}, err
	}
	e, err := h.entryAt(ctx, repo, br, sg.Key, sg.VersionID)
	if err != nil {
		return composePiece{}, auth.Source{}, err
	}
	if err := h.auth.Ceiling(ctx, c.p, t, e); err != nil {
		return composePiece{}, auth.Source{}, err // before the range is checked against its size
	}
	if err := checkRange(fmt.Sprintf("segment %d (%s)", i, sg.Key), sg.Offset, sg.Length, e.Size); err != nil {
		return composePiece{}, auth.Source{}, err
	}
	content, err := h.contentOf(ctx, e)
	if err != nil {
		return composePiece{}, auth.Source{}, err
	}
	src := auth.Source{Target: t, Entry: e, Range: auth.Range{Off: sg.Offset, Len: sg.Length}}
	return composePiece{content: content, off: sg.Offset, n: sg.Length}, src, nil
}

// compose stores the new version a plan describes and returns it with the
// number of bytes it had to write anew.
func (h *Handler) compose(ctx context.Context, dst auth.Target, plan *composePlan, a *apiv1.ObjectComposeRequest, cond branch.Condition) (*manifest.Entry, int64, error) {
	up := h.b.Chunks().NewUpload()
	defer up.Close()
	var refs []chunk.Ref
	var sl *manifest.Seal
	if plan.domain != "" {
		var err error
		if refs, sl, err = h.composeSealed(ctx, up, plan); err != nil {
			return nil, 0, err
		}
	}
	for _, pc := range plan.pieces {
		if sl != nil {
			break // sealed whole above
		}
		var rs []chunk.Ref
		var err error
		if pc.content == nil {
			rs, _, err = up.Ingest(ctx, bytes.NewReader(pc.data))
		} else {
			rs, err = h.sliceContent(ctx, up, pc.content, pc.off, pc.n)
		}
		if err != nil {
			return nil, 0, err
		}
		if refs = append(refs, rs...); len(refs) > maxComposeRefs {
			return nil, 0, invalid(fmt.Sprintf("the composed object would have more than %d chunks", maxComposeRefs))
		}
	}
	if err := up.Sync(ctx); err != nil {
		return nil, 0, err
	}
	e := &manifest.Entry{Size: plan.size, ETag: composeETag(refs), ContentType: a.ContentType, Meta: sortedMeta(a.Meta), Label: plan.label,
		Retention: plan.retention}
	if e.ContentType == "" {
		e.ContentType = "binary/octet-stream"
	}
	ch, data := e.SetContent(&manifest.Content{Chunks: refs, Seal: sl})
	stored, err := h.b.Put(ctx, dst.Repo, dst.Branch, dst.Key, e, cond, up, branch.ContentRecord{Hash: ch, Data: data})
	if err != nil {
		return nil, 0, err
	}
	return stored, up.NewBytes(), nil
}

// composeRetention decides the result's retention class: the rules'
// (a sensitive one is sealed under the rules' domain), or sealed under
// the domain of its sealed sources, which must share one.
func (h *Handler) composeRetention(ctx context.Context, c *call, a *apiv1.ObjectComposeRequest, plan *composePlan) error {
	var err error
	if plan.retention, plan.domain, err = h.auth.Retention(ctx, c.p, a.Repo, a.Key, "", ""); err != nil {
		return err
	}
	for _, pc := range plan.pieces {
		if pc.content == nil || pc.content.Seal == nil {
			continue
		}
		d := pc.content.Seal.Domain
		if plan.domain != "" && plan.domain != d {
			return invalid(fmt.Sprintf("a source is sealed under key domain %s, the result would be sealed under %s: compose seals under one domain", d, plan.domain))
		}
		if err := h.b.CheckContent(pc.content); err != nil {
			return err
		}
		plan.retention, plan.domain = label.Sensitive, d
	}
	return nil
}

// composeSealed stores the plan's bytes as one segment sealed under its
// domain: the plaintext of every piece streams through (no chunk is
// shared with a source).
func (h *Handler) composeSealed(ctx context.Context, up *cas.Upload, plan *composePlan) ([]chunk.Ref, *manifest.Seal, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var err error
		for _, pc := range plan.pieces {
			if pc.content == nil {
				_, err = pw.Write(pc.data)
			} else {
				err = h.b.ReadContent(ctx, pw, pc.content, pc.off, pc.n)
			}
			if err != nil {
				break
			}
		}
		pw.CloseWithError(err)
	}()
	refs, _, sl, err := h.b.Ingest(ctx, up, pr, nil, plan.domain)
	pr.CloseWithError(err)
	<-done
	return refs, sl, err
}

// composeETag is the MD5 of the chunk hashes and "-N" (the MD5 of
// nothing for an empty object).
func composeETag(refs []chunk.Ref) string {
	if len(refs) == 0 {
		return "d41d8cd98f00b204e9800998ecf8427e"
	}
	sum := md5.New()
	for _, r := range refs {
		sum.Write(r.Hash[:])
	}
	return hex.EncodeToString(sum.Sum(nil)) + "-" + strconv.Itoa(len(refs))
}

// maxMeta bounds user metadata and the content type, as S3 does (2 KB).
const maxMeta = 2 << 10

// checkMeta refuses metadata S3 would refuse for its size.
func checkMeta(contentType string, meta map[string]string) error {
	n := len(contentType)
	for k, v := range meta {
		n += len(k) + len(v)
	}
	if n > maxMeta {
		return &Error{Status: http.StatusBadRequest, Code: "MetadataTooLarge", Message: "metadata and content type exceed 2 KB"}
	}
	return nil
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
func (h *Handler) objectRename(ctx context.Context, c *call, a *apiv1.ObjectRenameRequest) (*apiv1.ObjectRenameResponse, error) {
	br, err := h.target(ctx, c, a.Repo, a.Branch)
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
		e, err := h.b.Rename(ctx, a.Repo, br, a.From, a.To, a.NoReplace, c.p.Writer())
		if err != nil {
			return nil, err
		}
		return &apiv1.ObjectRenameResponse{Renamed: 1, Atomic: true, VersionID: e.VersionID}, nil
	}
	// For a directory, keys outside a lease's view stay where they are;
	// a visible key whose new name the lease may not write stops the
	// rename (before the batch holding it moves), so nothing is moved to
	// a hidden name or silently left behind.
	res, err := h.b.RenamePrefix(ctx, a.Repo, br, a.From, a.To, c.p.Writer(), func(from, to string) error {
		if err := h.authorize(ctx, c, lease.Read, a.Repo, br, from); err != nil {
			if errors.Is(err, auth.ErrNotFound) {
				return branch.ErrNoSuchKey
			}
			return err
		}
		return check(from, to)
	})
	if err != nil {
		return nil, err
	}
	return &apiv1.ObjectRenameResponse{Renamed: res.Renamed, Atomic: res.Atomic}, nil
}
