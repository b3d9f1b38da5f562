package s3api

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// initiateResult is the InitiateMultipartUploadResult document.
type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

// branchName resolves the branch a request addresses.
func (s *Server) branchName(req *request) (string, error) {
	if req.branch != "" {
		return req.branch, nil
	}
	r, err := s.b.GetRepo(req.ctx(), req.repo)
	if err != nil {
		return "", err
	}
	return r.DefaultBranch, nil
}

// createUpload answers CreateMultipartUpload: a new upload to the
// addressed key, with the checksum its parts will carry.
func (s *Server) createUpload(req *request) error {
	if err := s.allow(req, lease.Write, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		return err
	}
	h := req.r.Header
	if err := rejectUnsupported(h); err != nil {
		return err
	}
	e, err := s.entryFromHeaders(h)
	if err != nil {
		return err
	}
	// The label names stay in the upload's metadata until completion
	// labels the object; a bad one fails here, before any part is sent.
	if _, err := takeLabelMeta(&manifest.Entry{Meta: e.Meta}); err != nil {
		return err
	}
	// The retention class is decided now: every part is sealed as it
	// arrives, under the domain kept in the upload's metadata.
	domain, err := s.retention(req, req.key, e)
	if err != nil {
		return err
	}
	if domain != "" {
		e.Meta = append(e.Meta, manifest.Pair{Name: metaDomain, Value: domain})
	}
	if v := h.Get("x-amz-checksum-algorithm"); v != "" {
		alg, err := checksum.Parse(v)
		if err != nil {
			return err
		}
		typ := strings.ToUpper(h.Get("x-amz-checksum-type"))
		switch {
		case typ == "" && alg == checksum.CRC64NVME:
			typ = "FULL_OBJECT"
		case typ == "":
			typ = "COMPOSITE"
		case typ != "FULL_OBJECT" && typ != "COMPOSITE":
			return errInvalidRequest("x-amz-checksum-type must be FULL_OBJECT or COMPOSITE")
		case typ == "FULL_OBJECT" && !alg.IsCRC():
			return errInvalidRequest("The FULL_OBJECT checksum type needs a CRC algorithm")
		case typ == "COMPOSITE" && alg == checksum.CRC64NVME:
			return errInvalidRequest("The COMPOSITE checksum type is not supported for CRC64NVME")
		}
		e.ChecksumAlgorithm, e.ChecksumType = string(alg), typ
	}
	if err := readBody(req, 64<<10, nil); err != nil {
		return err
	}
	up, err := s.b.CreateUpload(req.ctx(), req.repo, req.branch, req.key, e)
	if err != nil {
		return err
	}
	if e.ChecksumAlgorithm != "" {
		req.w.Header().Set("x-amz-checksum-algorithm", e.ChecksumAlgorithm)
		req.w.Header().Set("x-amz-checksum-type", e.ChecksumType)
	}
	return s.writeXML(req, http.StatusOK, initiateResult{Xmlns: s3ns, Bucket: req.bucket, Key: req.key, UploadID: up.ID})
}

// openUpload loads the upload a part request names and checks that it
// belongs to the addressed branch.
func (s *Server) openUpload(req *request, a lease.Action) (*branch.Upload, error) {
	if err := s.allow(req, a, req.repo, req.branch, req.key, noSuchUpload()); err != nil {
		return nil, err
	}
	id := req.query.Get("uploadId")
	if id == "" {
		return nil, errInvalidArgument("uploadId is required")
	}
	up, err := s.b.GetUpload(req.ctx(), req.repo, req.key, id)
	if err != nil {
		return nil, err
	}
	name, err := s.branchName(req)
	if err != nil {
		return nil, err
	}
	if up.Branch != name {
		return nil, fmt.Errorf("upload %s belongs to another branch: %w", id, branch.ErrNoSuchUpload)
	}
	return up, nil
}

// partNumber parses the partNumber query parameter (1 to 10000).
func partNumber(req *request) (int, error) {
	n, err := strconv.Atoi(req.query.Get("partNumber"))
	if err != nil || n < 1 || n > 10000 {
		return 0, errInvalidPartNumber()
	}
	return n, nil
}

// uploadPart answers UploadPart: the body stored as part partNumber of
// the upload.
func (s *Server) uploadPart(req *request) error {
	n, err := partNumber(req)
	if err != nil {
		return err
	}
	up, err := s.openUpload(req, lease.Write)
	if err != nil {
		return err
	}
	if alg := up.Entry.ChecksumAlgorithm; alg != "" && req.r.Header.Get("x-amz-sdk-checksum-algorithm") == "" && !hasChecksumHeader(req.r.Header) {
		// Compute the upload's algorithm even when the part names none.
		req.r.Header.Set("x-amz-sdk-checksum-algorithm", alg)
	}
	charge, err := s.chargeBody(req, maxPutSize)
	if err != nil {
		return err
	}
	in, err := s.ingest(req, maxPutSize, uploadDomain(up.Entry))
	if err != nil {
		charge.Refund(req.ctx())
		return err
	}
	defer in.up.Close()
	edges, err := s.sealEdges(in.content.Seal, in.edges)
	if err != nil {
		return err
	}
	part := &manifest.Entry{Size: in.size, ETag: in.md5, ModTime: time.Now().UnixNano(), Edges: edges}
	if in.secret {
		part.Label = &label.Label{Sensitivity: label.Secret} // completion labels the object secret
	}
	if alg, ok := in.set.Algorithm(); ok {
		if up.Entry.ChecksumAlgorithm != "" && string(alg) != up.Entry.ChecksumAlgorithm {
			return errInvalidRequest(fmt.Sprintf("Checksum Type mismatch occurred, expected checksum Type: %s, actual checksum Type: %s",
				strings.ToLower(up.Entry.ChecksumAlgorithm), strings.ToLower(string(alg))))
		}
		part.ChecksumAlgorithm, part.ChecksumValue = string(alg), in.set.Value()
	}
	ch, data := part.SetContent(in.content)
	if err := s.b.PutPart(req.ctx(), req.repo, req.key, up.ID, n, part, in.up, branch.ContentRecord{Hash: ch, Data: data}); err != nil {
		return err
	}
	h := req.w.Header()
	h.Set("ETag", quote(part.ETag))
	if part.ChecksumAlgorithm != "" {
		alg, _ := checksum.Parse(part.ChecksumAlgorithm)
		h.Set(alg.Header(), part.ChecksumValue)
	}
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

// uploadDomain is the key domain an upload's parts are sealed under (""
// when it is not sensitive).
func uploadDomain(e *manifest.Entry) string {
	if e.Retention != manifest.RetentionSensitive {
		return ""
	}
	for _, p := range e.Meta {
		if p.Name == metaDomain {
			return p.Value
		}
	}
	return ""
}

// hasChecksumHeader reports whether the request carries a checksum, as a
// header or as a trailer.
func hasChecksumHeader(h http.Header) bool {
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "x-amz-checksum-") && !strings.EqualFold(name, "x-amz-checksum-type") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(h.Get("x-amz-trailer")), "x-amz-checksum-")
}

// copyPartResult is the CopyPartResult document.
type copyPartResult struct {
	XMLName      xml.Name `xml:"CopyPartResult"`
	Xmlns        string   `xml:"xmlns,attr"`
	LastModified string   `xml:"LastModified"`
	ETag         string   `xml:"ETag"`
	checksumDoc
}

// uploadPartCopy makes a part from a range of an existing object. Whole
// chunks inside the range are shared; only the partial chunks at its edges
// are written anew. The range is read once to compute the part's MD5.
func (s *Server) uploadPartCopy(req *request) (err error) {
	n, err := partNumber(req)
	if err != nil {
		return err
	}
	up, err := s.openUpload(req, lease.Write)
	if err != nil {
		return err
	}
	from, src, rng, err := s.partSource(req)
	if err != nil {
		return err
	}
	read, written, err := s.chargeCopy(req, from, src, rng)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			read.Refund(req.ctx())
			written.Refund(req.ctx())
		}
	}()
	content, err := s.contentOf(req, src)
	if err != nil {
		return err
	}
	cu := s.chunks.NewUpload()
	defer cu.Close()
	md := newMD5()
	alg, sum, w := partHashes(up.Entry.ChecksumAlgorithm, md)
	scan, ends := newSecretScan(), newEdgeCapture()
	w = io.MultiWriter(w, scan, ends)
	refs, sl, err := s.copyPartBytes(req, cu, w, src, content, rng, uploadDomain(up.Entry))
	if err != nil {
		return err
	}
	if err := cu.Sync(req.ctx()); err != nil {
		return err
	}
	edges, err := s.sealEdges(sl, ends.edges())
	if err != nil {
		return err
	}
	part := &manifest.Entry{Size: rng.length, ETag: hex.EncodeToString(md.Sum(nil)), ModTime: time.Now().UnixNano(), Edges: edges}
	if err := s.labelPartCopy(req, part, from, src, scan.found()); err != nil {
		return err
	}
	if sum != nil {
		part.ChecksumAlgorithm, part.ChecksumValue = string(alg), base64.StdEncoding.EncodeToString(sum.Sum(nil))
	}
	ch, data := part.SetContent(&manifest.Content{Chunks: refs, Seal: sl})
	if err := s.b.PutPart(req.ctx(), req.repo, req.key, up.ID, n, part, cu, branch.ContentRecord{Hash: ch, Data: data}); err != nil {
		return err
	}
	if src.VersionID != "" {
		req.w.Header().Set("x-amz-copy-source-version-id", src.VersionID)
	}
	doc := copyPartResult{Xmlns: s3ns, LastModified: isoTime(part.ModTime), ETag: quote(part.ETag), checksumDoc: checksumsOf(part)}
	doc.ChecksumType = "" // parts have no checksum type
	return s.writeXML(req, http.StatusOK, doc)
}

// copyPartBytes stores rng of src (its content) as the chunks of a part
// in cu, writing the plaintext to w, and returns them with their seal
// when the upload is sealed under domain. Plain content into a plain
// upload shares whole chunks; anything sealed, on either side, and lazy
// content streams through.
func (s *Server) copyPartBytes(req *request, cu *cas.Upload, w io.Writer, src *manifest.Entry, content *manifest.Content, rng byteRange, domain string) ([]chunk.Ref, *manifest.Seal, error) {
	switch {
	case src.Lazy():
		// Its bytes come through the materializer (a read of the source).
		return s.copyLazy(req, cu, w, src, rng, domain)
	case content.Seal != nil && content.Seal.Domain != domain:
		return nil, nil, errInvalidRequest(fmt.Sprintf("the source is sensitive, sealed under key domain %s: copy its bytes only into an upload "+
			"sealed under it (x-amz-meta-nas-retention: sensitive, x-amz-meta-nas-domain: %[1]s)", domainIn(req.repo, content.Seal.Domain)))
	case content.Seal != nil || domain != "":
		if err := s.b.CheckContent(content); err != nil {
			return nil, nil, err
		}
		return s.ingestFrom(req, cu, w, domain, func(pw io.Writer) error {
			return s.b.ReadContent(req.ctx(), pw, content, rng.start, rng.length)
		})
	}
	refs, err := s.copyChunks(req, cu, w, content, rng, nil)
	return refs, nil, err
}

// partSource is what a part copy reads: the source it may read, its
// entry (whose copy conditions hold) and the range of it.
func (s *Server) partSource(req *request) (copySrc, *manifest.Entry, byteRange, error) {
	from, err := s.readableSource(req)
	if err != nil {
		return from, nil, byteRange{}, err
	}
	src, err := s.sourceEntry(req, from)
	if err != nil {
		return from, nil, byteRange{}, err
	}
	rng, err := sourceRange(req, src)
	if err != nil {
		return from, nil, byteRange{}, err
	}
	return from, src, rng, nil
}

// chargeCopy charges a part copy before anything is read. The part's ETag
// is the MD5 of the range: reading it reveals content, so the range is
// charged and recorded as a read, and as a write of the part; both are
// charged or neither.
func (s *Server) chargeCopy(req *request, from copySrc, src *manifest.Entry, rng byteRange) (read, written *auth.Charge, err error) {
	read, err = s.chargeRead(req, from.repo, from.branch, from.key, src, rng)
	if err != nil {
		return nil, nil, err
	}
	written, err = s.chargeWrite(req, rng.length)
	if err != nil {
		read.Refund(req.ctx())
		return nil, nil, err
	}
	return read, written, nil
}

// sourceRange is the range of src that x-amz-copy-source-range names
// (all of src without it); no larger than a part may be.
func sourceRange(req *request, src *manifest.Entry) (byteRange, error) {
	rng := byteRange{length: src.Size}
	if v := req.r.Header.Get("x-amz-copy-source-range"); v != "" {
		r, ok, rerr := parseRange(v, src.Size)
		if rerr != nil || !ok || strings.HasPrefix(strings.TrimPrefix(v, "bytes="), "-") {
			return rng, errInvalidArgument(fmt.Sprintf("Range specified is not valid for source object of size: %d", src.Size))
		}
		if _, end, _ := strings.Cut(v, "-"); end != strconv.FormatInt(r.start+r.length-1, 10) {
			// A copy's range is exact: its end must lie inside the source.
			return rng, errInvalidRange()
		}
		rng = r
	}
	if rng.length > maxPutSize {
		return rng, errInvalidRequest("The specified copy source is larger than the maximum allowable size for a copy source: 5368709120")
	}
	return rng, nil
}

// partHashes starts the upload's checksum of a copied part (sum is nil
// when the upload has none) and returns the writer that feeds both it
// and md, the part's MD5.
func partHashes(algorithm string, md hash.Hash) (alg checksum.Algorithm, sum hash.Hash, w io.Writer) {
	alg, _ = checksum.Parse(algorithm)
	if algorithm != "" {
		sum = alg.New()
	}
	w = io.Writer(md)
	if sum != nil {
		w = io.MultiWriter(md, sum)
	}
	return alg, sum, w
}

// copyChunks appends to refs the chunks of content that hold rng, and
// writes rng's bytes to w: a chunk wholly inside is shared (pinned in
// cu), a partial one at an edge is stored anew in cu.
func (s *Server) copyChunks(req *request, cu *cas.Upload, w io.Writer, content *manifest.Content, rng byteRange, refs []chunk.Ref) ([]chunk.Ref, error) {
	var off int64
	end := rng.start + rng.length
	var buf bytes.Buffer
	for _, ref := range content.Chunks {
		size := int64(ref.Size)
		if off+size <= rng.start || off >= end {
			off += size
			continue
		}
		from, to := max(rng.start-off, 0), min(end-off, size)
		if from == 0 && to == size {
			if err := s.chunks.Read(req.ctx(), w, ref.Hash, 0, size); err != nil {
				return refs, err
			}
			cu.Pin([]chunk.Ref{ref})
			refs = append(refs, ref)
		} else {
			buf.Reset()
			if err := s.chunks.Read(req.ctx(), io.MultiWriter(w, &buf), ref.Hash, from, to-from); err != nil {
				return refs, err
			}
			nr, err := cu.Put(req.ctx(), buf.Bytes())
			if err != nil {
				return refs, err
			}
			refs = append(refs, nr)
		}
		off += size
	}
	return refs, nil
}

// partDoc is a part of the ListPartsResult document.
type partDoc struct {
	PartNumber   int    `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	checksumDoc
}

// listPartsResult is the ListPartsResult document.
type listPartsResult struct {
	XMLName              xml.Name  `xml:"ListPartsResult"`
	Xmlns                string    `xml:"xmlns,attr"`
	Bucket               string    `xml:"Bucket"`
	Key                  string    `xml:"Key"`
	UploadID             string    `xml:"UploadId"`
	Initiator            *owner    `xml:"Initiator"`
	Owner                *owner    `xml:"Owner"`
	StorageClass         string    `xml:"StorageClass"`
	PartNumberMarker     int       `xml:"PartNumberMarker"`
	NextPartNumberMarker int       `xml:"NextPartNumberMarker"`
	MaxParts             int       `xml:"MaxParts"`
	IsTruncated          bool      `xml:"IsTruncated"`
	ChecksumAlgorithm    string    `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType         string    `xml:"ChecksumType,omitempty"`
	Parts                []partDoc `xml:"Part"`
}

// listParts answers ListParts: the upload's parts, a page at a time.
func (s *Server) listParts(req *request) error {
	up, err := s.openUpload(req, lease.List)
	if err != nil {
		return err
	}
	q := req.query
	max, err := maxKeys(q.Get("max-parts"), 1000)
	if err != nil {
		return err
	}
	marker := 0
	if v := q.Get("part-number-marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return errInvalidArgument("part-number-marker must be a non-negative integer")
		}
	}
	parts, truncated, err := s.b.ListParts(req.ctx(), req.repo, req.key, up.ID, marker, max)
	if err != nil {
		return err
	}
	doc := listPartsResult{Xmlns: s3ns, Bucket: req.bucket, Key: req.key, UploadID: up.ID, Initiator: s.ownerDoc(),
		Owner: s.ownerDoc(), StorageClass: "STANDARD", PartNumberMarker: marker, MaxParts: max, IsTruncated: truncated,
		ChecksumAlgorithm: up.Entry.ChecksumAlgorithm, ChecksumType: up.Entry.ChecksumType}
	for _, p := range parts {
		d := partDoc{PartNumber: p.Number, LastModified: isoTime(p.Entry.ModTime), ETag: quote(p.Entry.ETag), Size: p.Entry.Size, checksumDoc: checksumsOf(p.Entry)}
		d.ChecksumType = ""
		doc.Parts = append(doc.Parts, d)
		doc.NextPartNumberMarker = p.Number
	}
	return s.writeXML(req, http.StatusOK, doc)
}

// completeRequest is the CompleteMultipartUpload document.
type completeRequest struct {
	XMLName xml.Name       `xml:"CompleteMultipartUpload"`
	Parts   []completePart `xml:"Part"`
}

// completePart is a part as CompleteMultipartUpload lists it.
type completePart struct {
	PartNumber        int    `xml:"PartNumber"`
	ETag              string `xml:"ETag"`
	ChecksumCRC32     string `xml:"ChecksumCRC32"`
	ChecksumCRC32C    string `xml:"ChecksumCRC32C"`
	ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME"`
	ChecksumSHA1      string `xml:"ChecksumSHA1"`
	ChecksumSHA256    string `xml:"ChecksumSHA256"`
}

// completeResult is the CompleteMultipartUploadResult document.
type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Xmlns    string   `xml:"xmlns,attr"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
	checksumDoc
}

// completeUpload concatenates the parts' chunk lists into the object: no
// bytes are read or written.
func (s *Server) completeUpload(req *request) error {
	up, err := s.openUpload(req, lease.Write)
	if errors.Is(err, branch.ErrNoSuchUpload) {
		return s.completedBefore(req, err)
	}
	if err != nil {
		return err
	}
	var c completeRequest
	if err := readBody(req, 8<<20, &c); err != nil {
		return err
	}
	numbers, err := c.numbers()
	if err != nil {
		return err
	}
	parts, err := s.b.Parts(req.ctx(), req.repo, req.key, up.ID, numbers)
	if err != nil {
		return err
	}
	e := *up.Entry
	content, err := s.joinParts(req, &e, c.Parts, parts)
	if err != nil {
		return err
	}
	takeRetentionMeta(&e) // the domain is the seal's now
	if err := checkStatedChecksum(req.r.Header, &e); err != nil {
		return err
	}
	if err := s.labelParts(req, &e, parts); err != nil {
		return err
	}
	cond, err := s.writeCondition(req, req.key)
	if err != nil {
		return err
	}
	cu := s.chunks.NewUpload()
	defer cu.Close()
	cu.Pin(content.Chunks)
	ch, data := e.SetContent(content)
	stored, err := s.b.CompleteUpload(req.ctx(), req.repo, req.key, up.ID, &e, cond, cu, branch.ContentRecord{Hash: ch, Data: data})
	if err != nil {
		return err
	}
	req.w.Header().Set("x-amz-version-id", stored.VersionID)
	doc := completeResult{Xmlns: s3ns, Location: "/" + req.bucket + "/" + req.key, Bucket: req.bucket, Key: req.key, ETag: quote(stored.ETag), checksumDoc: checksumsOf(stored)}
	return s.writeXML(req, http.StatusOK, doc)
}

// completedBefore answers a CompleteMultipartUpload repeated after it
// succeeded (a client retrying a lost response) as S3 does: 200 with the
// object's ETag, when the key's current object is the one these parts
// make (its multipart ETag is a function of theirs). Anything else is
// the upload's absence, gone.
func (s *Server) completedBefore(req *request, gone error) error {
	var c completeRequest
	if err := readBody(req, 8<<20, &c); err != nil {
		return err
	}
	if _, err := c.numbers(); err != nil {
		return gone
	}
	md5s := make([]string, len(c.Parts))
	for i, p := range c.Parts {
		md5s[i] = strings.Trim(p.ETag, `" `)
	}
	etag, ok := multipartETag(md5s)
	if !ok || s.probe(req, req.repo, req.branch, req.key, nil) != nil {
		return gone
	}
	e, err := s.b.Get(req.ctx(), req.repo, req.branch, req.key)
	if err != nil || e.ETag != etag {
		return gone
	}
	req.w.Header().Set("x-amz-version-id", e.VersionID)
	doc := completeResult{Xmlns: s3ns, Location: "/" + req.bucket + "/" + req.key, Bucket: req.bucket, Key: req.key, ETag: quote(e.ETag), checksumDoc: checksumsOf(e)}
	return s.writeXML(req, http.StatusOK, doc)
}

// numbers returns the part numbers the request lists: at least one, in
// ascending order.
func (c *completeRequest) numbers() ([]int, error) {
	if len(c.Parts) == 0 {
		return nil, errMalformedXML("The XML you provided was not well-formed or did not validate against our published schema.")
	}
	numbers := make([]int, len(c.Parts))
	for i, p := range c.Parts {
		if i > 0 && p.PartNumber <= c.Parts[i-1].PartNumber {
			return nil, toS3(branch.ErrInvalidPartOrder)
		}
		numbers[i] = p.PartNumber
	}
	return numbers, nil
}

// joinParts checks the stored parts against those listed and joins them
// into e: their chunk lists make its content, their sizes its size, their
// MD5s its ETag and their checksums its checksum.
func (s *Server) joinParts(req *request, e *manifest.Entry, listed []completePart, parts []branch.PartInfo) (*manifest.Content, error) {
	content := &manifest.Content{}
	md5s := make([]string, len(parts))
	var sums [][]byte
	var crcParts []checksum.Part
	for i, p := range parts {
		if err := checkPart(listed[i], p, i == len(parts)-1); err != nil {
			return nil, err
		}
		pc, err := s.ms.Content(req.ctx(), p.Entry)
		if err != nil {
			return nil, err
		}
		if err := joinSeal(content, pc, uploadDomain(e), p.Number); err != nil {
			return nil, err
		}
		if p.Entry.Edges, err = s.openEdges(pc.Seal, p.Entry.Edges); err != nil {
			return nil, err
		}
		content.Chunks = append(content.Chunks, pc.Chunks...)
		content.Parts = append(content.Parts, manifest.Part{Size: p.Entry.Size, Checksum: p.Entry.ChecksumValue})
		e.Size += p.Entry.Size
		md5s[i] = p.Entry.ETag
		if e.ChecksumAlgorithm != "" {
			if p.Entry.ChecksumAlgorithm != e.ChecksumAlgorithm {
				return nil, errInvalidRequest(fmt.Sprintf("part %d has no %s checksum", p.Number, e.ChecksumAlgorithm))
			}
			raw, err := base64.StdEncoding.DecodeString(p.Entry.ChecksumValue)
			if err != nil {
				return nil, err
			}
			sums = append(sums, raw)
			crcParts = append(crcParts, checksum.Part{Sum: raw, Size: p.Entry.Size})
		}
	}
	if e.Size > maxObjectSize {
		return nil, errEntityTooLarge("Your proposed upload exceeds the maximum allowed object size.")
	}
	etag, ok := multipartETag(md5s)
	if !ok {
		return nil, errInternal()
	}
	e.ETag = etag
	if err := combineChecksums(e, sums, crcParts); err != nil {
		return nil, err
	}
	return content, nil
}

// sealEdges seals a sealed part's edges (kept in its stored entry, in the
// metadata store) under the part's key, so no plaintext of a sensitive
// upload lies there; plain parts keep them as they are.
func (s *Server) sealEdges(sl *manifest.Seal, x *manifest.Edges) (*manifest.Edges, error) {
	if sl == nil || x == nil {
		return x, nil
	}
	head, err := s.b.SealBytes(sl, x.Head)
	if err != nil {
		return nil, err
	}
	tail, err := s.b.SealBytes(sl, x.Tail)
	return &manifest.Edges{Head: head, Tail: tail}, err
}

// openEdges opens what sealEdges sealed, for the joint scan.
func (s *Server) openEdges(sl *manifest.Seal, x *manifest.Edges) (*manifest.Edges, error) {
	if sl == nil || x == nil {
		return x, nil
	}
	head, err := s.b.OpenBytes(sl, x.Head)
	if err != nil {
		return nil, err
	}
	tail, err := s.b.OpenBytes(sl, x.Tail)
	return &manifest.Edges{Head: head, Tail: tail}, err
}

// joinSeal appends part n's seal to content's: every part of a
// sensitive upload is sealed under the one key of its domain (a part
// sealed under a key destroyed or replaced meanwhile cannot join).
func joinSeal(content, part *manifest.Content, domain string, n int) error {
	switch {
	case domain == "" && part.Seal == nil:
		return nil
	case part.Seal == nil || part.Seal.Domain != domain:
		return errInvalidPartSeal(n)
	case content.Seal == nil:
		content.Seal = &manifest.Seal{Domain: domain, KeyID: part.Seal.KeyID}
	case content.Seal.KeyID != part.Seal.KeyID:
		return errInvalidPartSeal(n)
	}
	content.Seal.Segments = append(content.Seal.Segments, part.Seal.Segments...)
	return nil
}

func errInvalidPartSeal(n int) error {
	return &Error{Status: http.StatusBadRequest, Code: "InvalidPart",
		Message: fmt.Sprintf("part %d was sealed under another key of the upload's domain (it was destroyed or replaced since); upload it again", n)}
}

// checkPart checks a stored part against the request's listing of it:
// the same ETag and checksum, and, but for the last part, the minimum
// size.
func checkPart(want completePart, p branch.PartInfo, last bool) error {
	if strings.Trim(want.ETag, `" `) != p.Entry.ETag {
		return toS3(branch.ErrInvalidPart)
	}
	if !last && p.Entry.Size < minPartSize {
		return toS3(branch.ErrEntityTooSmall)
	}
	for _, given := range []string{want.ChecksumCRC32, want.ChecksumCRC32C, want.ChecksumCRC64NVME, want.ChecksumSHA1, want.ChecksumSHA256} {
		if given != "" && given != p.Entry.ChecksumValue {
			return toS3(branch.ErrInvalidPart)
		}
	}
	return nil
}

// combineChecksums sets e's checksum from its parts': a CRC of the whole
// object (FULL_OBJECT) or a checksum of their checksums (COMPOSITE).
func combineChecksums(e *manifest.Entry, sums [][]byte, crcParts []checksum.Part) error {
	if e.ChecksumAlgorithm == "" {
		return nil
	}
	alg, _ := checksum.Parse(e.ChecksumAlgorithm)
	if e.ChecksumType == "FULL_OBJECT" {
		var err error
		if e.ChecksumValue, err = checksum.CombineCRC(alg, crcParts); err != nil {
			return err
		}
		return nil
	}
	e.ChecksumValue = checksum.Composite(alg, sums)
	return nil
}

// abortUpload answers AbortMultipartUpload.
func (s *Server) abortUpload(req *request) error {
	up, err := s.openUpload(req, lease.Write)
	if err != nil {
		return err
	}
	if err := s.b.AbortUpload(req.ctx(), req.repo, req.key, up.ID); err != nil {
		return err
	}
	req.started = true
	req.w.WriteHeader(http.StatusNoContent)
	return nil
}

// uploadDoc is an upload of the ListMultipartUploadsResult document.
type uploadDoc struct {
	Key               string `xml:"Key"`
	UploadID          string `xml:"UploadId"`
	Initiator         *owner `xml:"Initiator"`
	Owner             *owner `xml:"Owner"`
	StorageClass      string `xml:"StorageClass"`
	Initiated         string `xml:"Initiated"`
	ChecksumAlgorithm string `xml:"ChecksumAlgorithm,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

// listUploadsResult is the ListMultipartUploadsResult document.
type listUploadsResult struct {
	XMLName            xml.Name    `xml:"ListMultipartUploadsResult"`
	Xmlns              string      `xml:"xmlns,attr"`
	Bucket             string      `xml:"Bucket"`
	KeyMarker          string      `xml:"KeyMarker"`
	UploadIDMarker     string      `xml:"UploadIdMarker"`
	NextKeyMarker      string      `xml:"NextKeyMarker,omitempty"`
	NextUploadIDMarker string      `xml:"NextUploadIdMarker,omitempty"`
	Prefix             string      `xml:"Prefix"`
	Delimiter          string      `xml:"Delimiter,omitempty"`
	MaxUploads         int         `xml:"MaxUploads"`
	EncodingType       string      `xml:"EncodingType,omitempty"`
	IsTruncated        bool        `xml:"IsTruncated"`
	Uploads            []uploadDoc `xml:"Upload"`
	CommonPrefixes     []prefixDoc `xml:"CommonPrefixes"`
}

// listUploads answers ListMultipartUploads: the repository's uploads
// in progress, a page at a time.
func (s *Server) listUploads(req *request) error {
	q := req.query
	enc, err := encodingType(q.Get("encoding-type"))
	if err != nil {
		return err
	}
	max, err := maxKeys(q.Get("max-uploads"), 1000)
	if err != nil {
		return err
	}
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	name, err := s.branchName(req)
	if err != nil {
		return err
	}
	o := branch.UploadListOptions{Prefix: q.Get("prefix"), Delimiter: q.Get("delimiter"), KeyMarker: q.Get("key-marker"),
		UploadIDMarker: q.Get("upload-id-marker"), MaxUploads: max, Branch: name, Filter: s.listFilter(req)}
	res, err := s.b.ListUploads(req.ctx(), req.repo, o)
	if err != nil {
		return err
	}
	doc := listUploadsResult{Xmlns: s3ns, Bucket: req.bucket, KeyMarker: enc.enc(o.KeyMarker), UploadIDMarker: o.UploadIDMarker,
		NextKeyMarker: enc.enc(res.NextKeyMarker), NextUploadIDMarker: res.NextUploadIDMarker, Prefix: enc.enc(o.Prefix),
		Delimiter: enc.enc(o.Delimiter), MaxUploads: max, IsTruncated: res.Truncated}
	if enc {
		doc.EncodingType = "url"
	}
	for _, u := range res.Uploads {
		doc.Uploads = append(doc.Uploads, uploadDoc{Key: enc.enc(u.Key), UploadID: u.ID, Initiator: s.ownerDoc(), Owner: s.ownerDoc(),
			StorageClass: "STANDARD", Initiated: isoTime(u.Created), ChecksumAlgorithm: u.Entry.ChecksumAlgorithm, ChecksumType: u.Entry.ChecksumType})
	}
	for _, p := range res.CommonPrefixes {
		doc.CommonPrefixes = append(doc.CommonPrefixes, prefixDoc{Prefix: enc.enc(p)})
	}
	return s.writeXML(req, http.StatusOK, doc)
}

// checkStatedChecksum compares the whole-object checksum a client may state
// on CompleteMultipartUpload with the one computed from the parts.
func checkStatedChecksum(h http.Header, e *manifest.Entry) error {
	if typ := h.Get("x-amz-checksum-type"); typ != "" && e.ChecksumType != "" && !strings.EqualFold(typ, e.ChecksumType) {
		return errInvalidRequest(fmt.Sprintf("The upload was created with checksum type %s, not %s", e.ChecksumType, typ))
	}
	for _, alg := range checksum.Algorithms {
		stated := h.Get(alg.Header())
		if stated == "" {
			continue
		}
		if string(alg) != e.ChecksumAlgorithm {
			return errInvalidRequest(fmt.Sprintf("The upload was created with checksum algorithm %q, not %s", e.ChecksumAlgorithm, alg))
		}
		want, _, _ := strings.Cut(e.ChecksumValue, "-")
		if got, _, _ := strings.Cut(stated, "-"); got != want {
			return &checksum.MismatchError{Algorithm: alg}
		}
	}
	return nil
}
