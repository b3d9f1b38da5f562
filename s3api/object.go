package s3api

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/source"
)

// Size limits of S3.
const (
	maxPutSize    = 5 << 30 // single PUT and part
	minPartSize   = 5 << 20 // every part but the last
	maxObjectSize = manifest.MaxSize
)

// newMD5 returns a new MD5 hash (ETags are MD5s).
func newMD5() hash.Hash { return md5.New() }

// ingested is a request body stored in the chunk store but not yet
// referenced by any entry.
type ingested struct {
	up      *cas.Upload
	set     *checksum.Set
	content *manifest.Content
	size    int64
	md5     string
	secret  bool // the scanner found credentials in the body
	edges   *manifest.Edges
	// captured is the body's start, for a handoff's schema (nil when no
	// handoff glob matches).
	captured *capture
}

// ingest streams the request body into the chunk store, verifying the
// payload signature, the declared length and every checksum the client sent
// before anything is recorded. The caller must Close the upload.
func (s *Server) ingest(req *request, limit int64, domain string) (*ingested, error) {
	size := req.auth.DecodedLength
	if size < 0 {
		return nil, errMissingLength()
	}
	if size > limit {
		return nil, errEntityTooLarge(fmt.Sprintf("Your proposed upload exceeds the maximum allowed size of %d bytes.", limit))
	}
	set, err := checksum.FromRequest(req.r.Header)
	if err != nil {
		return nil, err
	}
	defer set.Close() // the MD5 is taken below; Algorithm and Value stay valid
	return s.ingestBody(req, io.LimitReader(req.auth.Body, size+1), size, set, domain, func(n int64) error {
		switch {
		case n > size:
			return errInvalidRequest("the body is longer than the declared content length")
		case n < size:
			return errIncompleteBody("You did not provide the number of bytes specified by the Content-Length HTTP header.")
		}
		return set.Verify(req.auth.Trailer())
	})
}

// ingestBody streams body into the chunk store beside the checksums of
// set, sealed under domain's key when domain is set; check sees the
// length the body had and may refuse it, before the chunks are synced.
// A body of more than cas.ChunkMin bytes (size; -1 when unknown) waits
// for room under the ceiling on large bodies (admission). The caller must
// Close the upload.
func (s *Server) ingestBody(req *request, body io.Reader, size int64, set *checksum.Set, domain string, check func(n int64) error) (*ingested, error) {
	release, err := s.admit.acquire(req.ctx(), size)
	if err != nil {
		return nil, err
	}
	defer release()
	in := &ingested{up: s.chunks.NewUpload(), set: set}
	// The checksums and the secret scanner run on a goroutine of their own
	// beside chunking (they are the larger part of a large PUT's CPU);
	// IngestTee returns once they have seen the whole body, so check below
	// still sees all of it before anything is synced or recorded.
	scan, ends := newSecretScan(), newEdgeCapture()
	tee := io.MultiWriter(set.Writer(), scan, ends)
	capt, err := s.newCapture(req)
	if err != nil {
		in.up.Close()
		return nil, err
	}
	if capt != nil {
		tee = io.MultiWriter(tee, capt)
	}
	refs, n, sl, err := s.ingestMaybeSealed(req, in.up, body, tee, domain)
	in.secret, in.captured, in.edges = scan.found(), capt, ends.edges()
	if err == nil {
		err = check(n)
	}
	if err == nil {
		err = in.up.Sync(req.ctx())
	}
	if err != nil {
		in.up.Close()
		return nil, err
	}
	in.content = &manifest.Content{Chunks: refs, Seal: sl}
	in.size = n
	in.md5 = hex.EncodeToString(set.MD5())
	return in, nil
}

// ingestMaybeSealed stores body's chunks, with tee seeing its plaintext:
// as they are, or sealed under domain's key (branch.Service.Ingest).
func (s *Server) ingestMaybeSealed(req *request, up *cas.Upload, body io.Reader, tee io.Writer, domain string) ([]chunk.Ref, int64, *manifest.Seal, error) {
	return s.b.Ingest(req.ctx(), up, body, tee, domain)
}

// writableBranch fails fast, before a body is read, when the target does
// not exist or refuses writes.
func (s *Server) writableBranch(req *request) error {
	name := req.branch
	if name == "" {
		repo, err := s.b.GetRepo(req.ctx(), req.repo)
		if err != nil {
			return err
		}
		name = repo.DefaultBranch
	}
	br, err := s.b.GetBranch(req.ctx(), req.repo, name)
	if err != nil {
		return err
	}
	if br.Protected {
		return fmt.Errorf("%s/%s: %w", req.repo, name, branch.ErrProtected)
	}
	return nil
}

// writeCondition is the request's preconditions and its writer, under
// the door's veil (a lease's preconditions do not see what it may not).
func (s *Server) writeCondition(req *request, key string) (branch.Condition, error) {
	h := req.r.Header
	return s.auth.Condition(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch, Key: key}, branch.Condition{
		IfMatch:     strings.Trim(h.Get("If-Match"), `"`),
		IfNoneMatch: strings.Trim(h.Get("If-None-Match"), `"`),
	})
}

// prepareWrite is what a PUT and a POST form do before the body: the door
// allows writing the key, the headers h (a request's, or a form's fields)
// become the new entry's metadata, and the branch must take writes.
func (s *Server) prepareWrite(req *request, h http.Header) (*manifest.Entry, string, error) {
	if err := s.allow(req, lease.Write, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		return nil, "", err
	}
	if err := rejectUnsupported(h); err != nil {
		return nil, "", err
	}
	e, err := s.entryFromHeaders(h)
	if err != nil {
		return nil, "", err
	}
	domain, err := s.retention(req, req.key, e)
	if err != nil {
		return nil, "", err
	}
	return e, domain, s.writableBranch(req)
}

// putObject answers PutObject: the body stored as a new version of the
// addressed key.
func (s *Server) putObject(req *request) error {
	e, domain, err := s.prepareWrite(req, req.r.Header)
	if err != nil {
		return err
	}
	charge, err := s.chargeBody(req, maxPutSize)
	if err != nil {
		return err
	}
	in, err := s.ingest(req, maxPutSize, domain)
	if err != nil {
		charge.Refund(req.ctx())
		return err
	}
	defer in.up.Close()
	stored, err := s.stage(req, e, in)
	if err != nil {
		charge.Refund(req.ctx())
		return err
	}
	out := req.w.Header()
	out.Set("ETag", quote(stored.ETag))
	out.Set("x-amz-version-id", stored.VersionID)
	setChecksumHeaders(out, stored)
	setChunkMap(req, in.content)
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

// setChunkMap answers the chunk map of what a PUT just stored when the
// request asked for it (apiv1.ChunkMapHeader; the door refuses the header
// unless the signature covers it), the content is not sealed and the map
// is small.
func setChunkMap(req *request, c *manifest.Content) {
	if req.r.Header.Get(apiv1.ChunkMapHeader) != "1" || c == nil || c.Seal != nil ||
		len(c.Chunks) == 0 || len(c.Chunks) > apiv1.MaxChunkMapChunks {
		return
	}
	m := make([]apiv1.Chunk, len(c.Chunks))
	for i, r := range c.Chunks {
		m[i] = apiv1.Chunk{Hash: r.Hash.String(), Size: r.Size}
	}
	req.w.Header().Set(apiv1.ChunkMapHeader, apiv1.FormatChunkMap(m))
}

// stage stages the ingested body as a new version of the addressed key.
func (s *Server) stage(req *request, e *manifest.Entry, in *ingested) (*manifest.Entry, error) {
	e.Size, e.ETag = in.size, in.md5
	if alg, ok := in.set.Algorithm(); ok {
		e.ChecksumAlgorithm, e.ChecksumValue, e.ChecksumType = string(alg), in.set.Value(), "FULL_OBJECT"
	}
	if err := s.labelWrite(req, e, in.secret); err != nil {
		return nil, err
	}
	if err := s.handoff(req, e, in); err != nil {
		return nil, err
	}
	cond, err := s.writeCondition(req, req.key)
	if err != nil {
		return nil, err
	}
	ch, data := e.SetContent(in.content)
	return s.b.Put(req.ctx(), req.repo, req.branch, req.key, e, cond, in.up, branch.ContentRecord{Hash: ch, Data: data})
}

// setChecksumHeaders sets the x-amz-checksum-* headers of e's checksum,
// if it has one.
func setChecksumHeaders(h http.Header, e *manifest.Entry) {
	if e.ChecksumAlgorithm == "" {
		return
	}
	if alg, err := checksum.Parse(e.ChecksumAlgorithm); err == nil {
		h.Set(alg.Header(), e.ChecksumValue)
		h.Set("x-amz-checksum-type", e.ChecksumType)
	}
}

// setPartChecksum answers a GET or HEAD of one part of a multipart
// object, with checksum mode enabled, with that part's own checksum (the
// bytes sent are the part's, so a client verifies them against it).
func setPartChecksum(req *request, e *manifest.Entry, c *manifest.Content) {
	n, err := strconv.Atoi(req.query.Get("partNumber"))
	if err != nil || n < 1 || n > len(c.Parts) || c.Parts[n-1].Checksum == "" ||
		!strings.EqualFold(req.r.Header.Get("x-amz-checksum-mode"), "ENABLED") {
		return
	}
	if alg, err := checksum.Parse(e.ChecksumAlgorithm); err == nil {
		h := req.w.Header()
		h.Set(alg.Header(), c.Parts[n-1].Checksum)
		h.Set("x-amz-checksum-type", e.ChecksumType)
	}
}

// resolve finds the entry a GET, HEAD or copy source addresses.
func (s *Server) resolve(req *request, repo, br, key, vid string) (*manifest.Entry, error) {
	e, err := s.resolveEntry(req, repo, br, key, vid)
	if err != nil {
		return nil, err
	}
	if err := s.auth.Ceiling(req.ctx(), req.p, auth.Target{Repo: repo, Branch: br, Key: key}, e); err != nil {
		return nil, s.refusal(req, err, noSuchKey())
	}
	return e, nil
}

// resolveEntry finds the current version of key, or version vid.
func (s *Server) resolveEntry(req *request, repo, br, key, vid string) (*manifest.Entry, error) {
	if vid == "" {
		e, err := s.b.Get(req.ctx(), repo, br, key)
		if errors.Is(err, branch.ErrNoSuchKey) {
			return nil, s.deletedKey(req, repo, br, key, err)
		}
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	e, marker, err := s.b.GetVersion(req.ctx(), repo, br, key, vid)
	if errors.Is(err, branch.ErrInvalid) {
		return nil, errInvalidArgument("Invalid version id specified")
	}
	if err != nil {
		return nil, err
	}
	if marker {
		me := errMethodNotAllowed("The specified method is not allowed against this resource.")
		me.Header = http.Header{"X-Amz-Delete-Marker": {"true"}, "X-Amz-Version-Id": {vid}}
		return nil, me
	}
	return e, nil
}

// deletedKey is the answer for a key with no current version: NoSuchKey,
// and, when its latest version is a delete marker, S3's headers naming
// it (x-amz-delete-marker, x-amz-version-id). Only a key the caller may
// read gets here, so the headers reveal nothing hidden.
func (s *Server) deletedKey(req *request, repo, br, key string, err error) error {
	e := toS3(err)
	res, lerr := s.b.ListVersions(req.ctx(), repo, br, branch.VersionListOptions{Prefix: key, MaxKeys: 1})
	if lerr != nil || len(res.Versions) == 0 {
		return e
	}
	if v := res.Versions[0]; v.Key == key && v.DeleteMarker {
		e.Header = http.Header{"X-Amz-Delete-Marker": {"true"}, "X-Amz-Version-Id": {v.VersionID}}
	}
	return e
}

// getObject answers GET, or HEAD when head is set: the object's headers
// and, for GET, the bytes of the whole object, of a Range or of a part.
func (s *Server) getObject(req *request, head bool) error {
	if err := s.authorizeGet(req, head); err != nil {
		return err
	}
	e, err := s.resolve(req, req.repo, req.branch, req.key, req.query.Get("versionId"))
	if err != nil {
		return err
	}
	if s.lazy != nil {
		s.lazy.FillMeta(req.ctx(), e) // listed without it: asked of the source once
	}
	if ce := conditions(req.r.Header, e); ce != nil {
		if ce.Status == http.StatusNotModified {
			h := req.w.Header()
			h.Set("ETag", quote(e.ETag))
			h.Set("Last-Modified", httpTime(e.ModTime))
		}
		return ce
	}
	content, err := s.contentOf(req, e)
	if err != nil {
		return err
	}
	if !head {
		if err := s.b.CheckContent(content); err != nil {
			return err // a forgotten key: before any header is sent
		}
	}
	rng, partial, err := getRange(req, e, content)
	if err != nil {
		return err
	}
	lazy, err := s.chargeGet(req, e, rng, head)
	if err != nil {
		return err
	}
	if lazy != nil {
		defer lazy.Close()
	}
	status := setGetHeaders(req, e, rng, partial)
	s.labelHeaders(req, req.w.Header(), e)
	retentionHeaders(req.w.Header(), req.repo, e, content)
	setPartChecksum(req, e, content)
	req.started = true
	req.w.WriteHeader(status)
	if head || rng.length == 0 {
		return nil
	}
	if lazy != nil {
		return lazy.Copy(req.ctx(), req.w)
	}
	return s.writeContent(req, content, rng)
}

// authorizeGet asks the door whether the request may read the object:
// a HEAD probes, leaving a single-use grant for the GET that follows.
func (s *Server) authorizeGet(req *request, head bool) error {
	if head {
		return s.probe(req, req.repo, req.branch, req.key, noSuchKey())
	}
	return s.allow(req, lease.Read, req.repo, req.branch, req.key, noSuchKey())
}

// getRange is the byte range a GET asks for, a part (partNumber) before
// a Range, else the whole object; partial says the answer is 206.
func getRange(req *request, e *manifest.Entry, content *manifest.Content) (rng byteRange, partial bool, err error) {
	if req.query.Get("partNumber") != "" {
		return partRange(req, e, content)
	}
	if v := req.r.Header.Get("Range"); v != "" {
		r, ok, rerr := parseRange(v, e.Size)
		if rerr != nil {
			rerr.Header = http.Header{"Content-Range": {fmt.Sprintf("bytes */%d", e.Size)}}
			return rng, false, rerr
		}
		if ok {
			return r, true, nil
		}
	}
	return byteRange{length: e.Size}, false, nil
}

// partRange is the byte range of the part partNumber names; an object
// stored whole has one part, itself, which is not a partial answer.
func partRange(req *request, e *manifest.Entry, content *manifest.Content) (rng byteRange, partial bool, err error) {
	n, err := partNumber(req)
	if err != nil {
		return rng, false, err
	}
	if len(content.Parts) == 0 {
		if n != 1 {
			return rng, false, errInvalidPartNumberOf(n, 1)
		}
		return byteRange{length: e.Size}, false, nil
	}
	if n > len(content.Parts) {
		return rng, false, errInvalidPartNumberOf(n, len(content.Parts))
	}
	var off int64
	for _, p := range content.Parts[:n-1] {
		off += p.Size
	}
	return byteRange{start: off, length: content.Parts[n-1].Size}, true, nil
}

// chargeGet charges what a GET sends (a HEAD sends no bytes) before any
// object header is set, so a refusal carries none, and opens a lazy
// entry's source, which answers before the status is written. The
// caller closes the reader it returns (nil but for a lazy GET).
func (s *Server) chargeGet(req *request, e *manifest.Entry, rng byteRange, head bool) (*source.Reader, error) {
	if head {
		_, err := s.chargeRead(req, req.repo, req.branch, req.key, e, byteRange{})
		return nil, err
	}
	charge, err := s.chargeRead(req, req.repo, req.branch, req.key, e, rng)
	if err != nil {
		return nil, err
	}
	return s.openLazy(req, e, rng, charge)
}

// setGetHeaders sets the headers of a GET's or HEAD's answer and returns
// its status.
func setGetHeaders(req *request, e *manifest.Entry, rng byteRange, partial bool) int {
	h := req.w.Header()
	setObjectHeaders(h, e)
	for p, name := range responseOverrides {
		if v := req.query.Get(p); v != "" {
			h.Set(name, v)
		}
	}
	if !partial && strings.EqualFold(req.r.Header.Get("x-amz-checksum-mode"), "ENABLED") {
		setChecksumHeaders(h, e)
	}
	h.Set("Content-Length", strconv.FormatInt(rng.length, 10))
	if !partial {
		return http.StatusOK
	}
	h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", rng.start, rng.start+rng.length-1, e.Size))
	return http.StatusPartialContent
}

// writeContent streams the bytes of rng from content's chunks; each whole
// chunk is verified before it is written.
func (s *Server) writeContent(req *request, c *manifest.Content, rng byteRange) error {
	return s.b.ReadContent(req.ctx(), req.w, c, rng.start, rng.length)
}

// deleteObject answers DeleteObject: a delete marker, or with versionId
// the removal of that version.
func (s *Server) deleteObject(req *request) error {
	if err := s.allow(req, lease.Delete, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		if toS3(err).Code == "NoSuchKey" {
			// Outside the lease the key does not exist: deleting a missing
			// key succeeds and changes nothing.
			req.started = true
			req.w.WriteHeader(http.StatusNoContent)
			return nil
		}
		return err
	}
	if err := s.recordDelete(req, req.key, req.query.Get("versionId")); err != nil {
		return err
	}
	cond, err := s.writeCondition(req, req.key)
	if err != nil {
		return err
	}
	var res branch.DeleteResult
	if vid := req.query.Get("versionId"); vid != "" {
		res, err = s.b.DeleteVersion(req.ctx(), req.repo, req.branch, req.key, vid, cond)
		if errors.Is(err, branch.ErrNoSuchVersion) {
			err, res = nil, branch.DeleteResult{VersionID: vid}
		}
	} else {
		res, err = s.b.Delete(req.ctx(), req.repo, req.branch, req.key, cond)
	}
	if err != nil {
		return err
	}
	h := req.w.Header()
	if res.VersionID != "" {
		h.Set("x-amz-version-id", res.VersionID)
	}
	if res.DeleteMarker {
		h.Set("x-amz-delete-marker", "true")
	}
	req.started = true
	req.w.WriteHeader(http.StatusNoContent)
	return nil
}

// sealCopy decides how a copy's bytes are kept. A sealed source stays
// sealed: the copy shares its chunks and seal (destroying the key reaches
// it too) and is sensitive, unless the copy asks for another domain. A
// copy sealed under a domain its source's bytes are not sealed under is
// sealed anew, streaming the plaintext through: the new content is
// returned (nil when the copy shares the source's).
func (s *Server) sealCopy(req *request, up *cas.Upload, src, dst *manifest.Entry, content *manifest.Content, domain string) (*manifest.Content, error) {
	if content.Seal != nil && (domain == "" || domain == content.Seal.Domain) {
		dst.Retention = manifest.RetentionSensitive
		return nil, nil
	}
	if domain == "" {
		return nil, nil
	}
	rng := byteRange{length: src.Size}
	var refs []chunk.Ref
	var sl *manifest.Seal
	var err error
	if src.Lazy() {
		refs, sl, err = s.copyLazy(req, up, io.Discard, src, rng, domain)
	} else if err = s.b.CheckContent(content); err == nil {
		refs, sl, err = s.ingestFrom(req, up, io.Discard, domain, func(w io.Writer) error {
			return s.b.ReadContent(req.ctx(), w, content, 0, src.Size)
		})
	}
	if err == nil {
		err = up.Sync(req.ctx())
	}
	if err != nil {
		return nil, err
	}
	dst.Remote = nil
	return &manifest.Content{Chunks: refs, Parts: content.Parts, Seal: sl}, nil
}

// copySrc is the object a copy reads, as x-amz-copy-source names it.
type copySrc struct{ repo, branch, key, vid string }

// copySource parses x-amz-copy-source: "[/]bucket/key[?versionId=v]",
// URL-encoded. Within the same repository the source is read from the
// destination's branch unless the source bucket is a branch alias.
func (s *Server) copySource(req *request) (copySrc, error) {
	v := req.r.Header.Get("x-amz-copy-source")
	path, query, _ := strings.Cut(v, "?")
	path = strings.TrimPrefix(path, "/")
	path, err := url.PathUnescape(path)
	if err != nil {
		return copySrc{}, errInvalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	bucket, key, ok := strings.Cut(path, "/")
	if !ok || bucket == "" || key == "" {
		return copySrc{}, errInvalidArgument("Copy Source must mention the source bucket and key: sourcebucket/sourcekey")
	}
	src := copySrc{key: key}
	if query != "" {
		qv, perr := url.ParseQuery(query)
		if perr != nil {
			return copySrc{}, errInvalidArgument("malformed x-amz-copy-source query")
		}
		src.vid = qv.Get("versionId")
	}
	src.repo, src.branch = ParseAlias(bucket)
	if src.branch == "" && src.repo == req.repo {
		src.branch = req.branch
	}
	return src, nil
}

// readableSource parses x-amz-copy-source and asks the door whether the
// request may read it.
func (s *Server) readableSource(req *request) (copySrc, error) {
	src, err := s.copySource(req)
	if err != nil {
		return copySrc{}, err
	}
	if err := s.allow(req, lease.Read, src.repo, src.branch, src.key, noSuchKey()); err != nil {
		return copySrc{}, err
	}
	return src, nil
}

// sourceEntry resolves the copy source and checks the
// x-amz-copy-source-if-* conditions against it.
func (s *Server) sourceEntry(req *request, src copySrc) (*manifest.Entry, error) {
	e, err := s.resolve(req, src.repo, src.branch, src.key, src.vid)
	if err != nil {
		return nil, err
	}
	if ce := copyConditions(req.r.Header, e); ce != nil {
		return nil, ce
	}
	return e, nil
}

// copyObjectResult is the CopyObjectResult document.
type copyObjectResult struct {
	XMLName      xml.Name `xml:"CopyObjectResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	checksumDoc
}

// checksumDoc holds the Checksum* elements of response documents.
type checksumDoc struct {
	ChecksumCRC32     string `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	ChecksumSHA1      string `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256    string `xml:"ChecksumSHA256,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

// checksumsOf returns e's checksum as response elements.
func checksumsOf(e *manifest.Entry) checksumDoc {
	var d checksumDoc
	switch e.ChecksumAlgorithm {
	case "CRC32":
		d.ChecksumCRC32 = e.ChecksumValue
	case "CRC32C":
		d.ChecksumCRC32C = e.ChecksumValue
	case "CRC64NVME":
		d.ChecksumCRC64NVME = e.ChecksumValue
	case "SHA1":
		d.ChecksumSHA1 = e.ChecksumValue
	case "SHA256":
		d.ChecksumSHA256 = e.ChecksumValue
	default:
		return d
	}
	d.ChecksumType = e.ChecksumType
	return d
}

// copyTags applies x-amz-tagging-directive to dst, a copy of the source:
// COPY (the default) keeps the source's tags, REPLACE takes x-amz-tagging.
func copyTags(h http.Header, dst *manifest.Entry) error {
	switch d := h.Get("x-amz-tagging-directive"); {
	case d == "" || strings.EqualFold(d, "COPY"):
		return nil
	case !strings.EqualFold(d, "REPLACE"):
		return errInvalidArgument("Unknown tagging directive.")
	}
	tags, err := parseTaggingHeader(h)
	if err != nil {
		return err
	}
	dst.Tags = tags
	return nil
}

// copyObject makes a new version of the destination that shares the
// source's content: no bytes are read or written.
func (s *Server) copyObject(req *request) error {
	h := req.r.Header
	if err := rejectUnsupported(h); err != nil {
		return err
	}
	if err := s.allow(req, lease.Write, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		return err
	}
	from, err := s.readableSource(req)
	if err != nil {
		return err
	}
	if err := s.writableBranch(req); err != nil {
		return err
	}
	src, err := s.sourceEntry(req, from)
	if err != nil {
		return err
	}
	if s.lazy != nil {
		s.lazy.FillMeta(req.ctx(), src) // a copy keeps the metadata a GET of the source answers
	}
	dst := *src
	dst.VersionID, dst.ModTime = "", 0
	if err := copyTags(h, &dst); err != nil {
		return err
	}
	// As on S3, a copy gets the request's ACL or none, never the source's.
	if dst.ACL, err = s.requestACL(h); err != nil {
		return err
	}
	replace := strings.EqualFold(h.Get("x-amz-metadata-directive"), "REPLACE")
	if replace {
		m, err := metaFromHeaders(h)
		if err != nil {
			return err
		}
		dst.ContentType, dst.Headers, dst.Meta = m.ContentType, m.Headers, m.Meta
	} else if from.repo == req.repo && from.branch == req.branch && from.key == req.key && from.vid == "" {
		return errInvalidRequest("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.")
	}
	domain, err := s.retention(req, req.key, &dst)
	if err != nil {
		return err
	}
	// A lazy source is copied as the entry it is: the copy pins the same
	// remote version, and nothing is read.
	content, err := s.contentOf(req, src)
	if err != nil {
		return err
	}
	// The new version shares chunks (and the content list) with the source;
	// pin them so a concurrent sweep cannot take them.
	up := s.chunks.NewUpload()
	defer up.Close()
	up.Pin(content.Chunks)
	var rec branch.ContentRecord
	if !src.ContentRef.IsZero() {
		// Rewriting the (content-addressed) list keeps the new entry
		// independent of the source's lifetime.
		rec = branch.ContentRecord{Hash: src.ContentRef, Data: content.Encode()}
	}
	if resealed, err := s.sealCopy(req, up, src, &dst, content, domain); err != nil {
		return err
	} else if resealed != nil {
		ch, data := dst.SetContent(resealed)
		rec = branch.ContentRecord{Hash: ch, Data: data}
	}
	charge, err := s.auth.Copy(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch, Key: req.key}, src.Size,
		auth.Source{Target: auth.Target{Repo: from.repo, Branch: from.branch, Key: from.key}, Entry: src, Range: auth.Range{Len: src.Size}})
	if err != nil {
		return err
	}
	if err := s.labelCopy(req, &dst, from, src, replace); err != nil {
		charge.Refund(req.ctx())
		return err
	}
	cond, err := s.writeCondition(req, req.key)
	if err != nil {
		charge.Refund(req.ctx())
		return err
	}
	stored, err := s.b.Put(req.ctx(), req.repo, req.branch, req.key, &dst, cond, up, rec)
	if err != nil {
		charge.Refund(req.ctx())
		return err
	}
	out := req.w.Header()
	out.Set("x-amz-version-id", stored.VersionID)
	if src.VersionID != "" {
		out.Set("x-amz-copy-source-version-id", src.VersionID)
	}
	doc := copyObjectResult{Xmlns: s3ns, LastModified: isoTime(stored.ModTime), ETag: quote(stored.ETag), checksumDoc: checksumsOf(stored)}
	return s.writeXML(req, http.StatusOK, doc)
}
