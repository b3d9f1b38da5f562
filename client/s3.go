package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentnas/nas/apiv1"
)

// Object names an object of a branch. Branch "" means the repository's
// default branch for the owner, the lease's own branch for a lease.
type Object struct {
	Repo, Branch, Key string
}

func (o Object) String() string {
	if o.Branch == "" {
		return o.Repo + "/" + o.Key
	}
	return o.Repo + "@" + o.Branch + "/" + o.Key
}

// Info is what a GET or PUT answer says about an object.
type Info struct {
	Size      int64 // the whole object's size
	ETag      string
	VersionID string
	// Header is the whole answer's header (budget headers among them).
	Header http.Header
	// Chunks is the new version's chunk map, when a Put asked for it
	// (PutOptions.ChunkMap) and the gateway answered one.
	Chunks []apiv1.Chunk
}

// objectURL is the path-style URL of o, its key escaped the way S3 SDKs
// put it on the wire (everything but unreserved bytes and '/').
func (c *Client) objectURL(o Object, q url.Values) string {
	u := c.cfg.Endpoint + "/" + o.Repo + "/" + EscapeKey(o.Key)
	if len(q) > 0 {
		u += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	}
	return u
}

func branchHeader(o Object) http.Header {
	h := http.Header{}
	if o.Branch != "" {
		h.Set("x-nas-branch", o.Branch)
	}
	return h
}

// Get reads n bytes of o at off (n < 0: to the end) and hands the body to
// fn, which may run again from the start if the transfer breaks off and
// is retried. versionID "" reads the current version.
func (c *Client) Get(ctx context.Context, o Object, versionID string, off, n int64, fn func(io.Reader, Info) error) error {
	q := url.Values{}
	if versionID != "" {
		q.Set("versionId", versionID)
	}
	h := branchHeader(o)
	if off > 0 || n >= 0 {
		if n == 0 {
			return fmt.Errorf("get %s: empty range", o)
		}
		if n < 0 {
			h.Set("Range", fmt.Sprintf("bytes=%d-", off))
		} else {
			h.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
		}
	}
	r := request{method: http.MethodGet, url: c.objectURL(o, q), header: h, payload: unsigned, retry: true}
	return c.do(ctx, r, func(resp *http.Response) error {
		info := infoOf(resp.Header)
		info.Size = resp.ContentLength
		if cr := resp.Header.Get("Content-Range"); cr != "" {
			if _, total, ok := strings.Cut(cr, "/"); ok {
				info.Size, _ = strconv.ParseInt(total, 10, 64)
			}
		}
		return fn(&exactReader{r: resp.Body, left: resp.ContentLength}, info)
	})
}

const unsigned = "UNSIGNED-PAYLOAD"

// exactReader fails with errShortBody when the body ends before its
// announced length, so a cut transfer is never taken for a short object.
type exactReader struct {
	r    io.Reader
	left int64 // -1: unknown
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if e.left >= 0 {
		e.left -= int64(n)
		if err == io.EOF && e.left > 0 {
			return n, errShortBody
		}
	}
	return n, err
}

func infoOf(h http.Header) Info {
	return Info{ETag: strings.Trim(h.Get("ETag"), `"`), VersionID: h.Get("x-amz-version-id"), Header: h}
}

// PutOptions are the stored headers of a new version.
type PutOptions struct {
	ContentType string
	// Meta is user metadata (x-amz-meta-NAME: VALUE), names lower-case.
	Meta map[string]string
	// Checksum sends the body's CRC32C, which the gateway verifies before
	// it stores anything (one extra pass over body).
	Checksum bool
	// ChunkMap asks the gateway for the new version's chunk map
	// (apiv1.ChunkMapHeader), answered in Info.Chunks.
	ChunkMap bool
}

func (p PutOptions) header(h http.Header) {
	if p.ContentType != "" {
		h.Set("Content-Type", p.ContentType)
	}
	for k, v := range p.Meta {
		h.Set("x-amz-meta-"+k, v)
	}
	if p.ChunkMap {
		h.Set(apiv1.ChunkMapHeader, "1")
	}
}

// Put stores size bytes of body as a new version of o. body is read from
// offset 0 on every attempt, so a retried PUT sends the same bytes.
func (c *Client) Put(ctx context.Context, o Object, body io.ReaderAt, size int64, opt PutOptions) (Info, error) {
	h := branchHeader(o)
	opt.header(h)
	if opt.Checksum {
		sum, err := crc32c(io.NewSectionReader(body, 0, size))
		if err != nil {
			return Info{}, fmt.Errorf("put %s: checksum the body: %w", o, err)
		}
		h.Set("x-amz-checksum-crc32c", sum)
	}
	var info Info
	r := request{method: http.MethodPut, url: c.objectURL(o, nil), header: h, payload: unsigned, retry: true,
		body: func() io.Reader { return io.NewSectionReader(body, 0, size) }, size: size}
	err := c.do(ctx, r, func(resp *http.Response) error {
		info = infoOf(resp.Header)
		info.Size = size
		if v := resp.Header.Get(apiv1.ChunkMapHeader); v != "" && opt.ChunkMap {
			info.Chunks, _ = apiv1.ParseChunkMap(v) // a malformed map is none: the caller asks again
		}
		return nil
	})
	return info, err
}

// Delete removes o from its branch (history keeps it) and returns the
// delete marker's version ID. Deleting a missing key succeeds.
func (c *Client) Delete(ctx context.Context, o Object) (Info, error) {
	var info Info
	r := request{method: http.MethodDelete, url: c.objectURL(o, nil), header: branchHeader(o), payload: unsigned, retry: true}
	err := c.do(ctx, r, func(resp *http.Response) error {
		info = infoOf(resp.Header)
		return nil
	})
	return info, err
}

// SetMeta replaces o's stored headers and user metadata with opt's,
// keeping its bytes (a self copy that moves no data); versionID "" takes
// the current version. It returns the new version.
func (c *Client) SetMeta(ctx context.Context, o Object, versionID string, opt PutOptions) (Info, error) {
	h := branchHeader(o)
	opt.header(h)
	src := "/" + o.Repo + "/" + EscapeKey(o.Key)
	if versionID != "" {
		src += "?versionId=" + url.QueryEscape(versionID)
	}
	h.Set("x-amz-copy-source", src)
	h.Set("x-amz-metadata-directive", "REPLACE")
	if opt.ContentType == "" {
		h.Set("Content-Type", "binary/octet-stream")
	}
	var info Info
	r := request{method: http.MethodPut, url: c.objectURL(o, nil), header: h, payload: unsigned, retry: true}
	err := c.do(ctx, r, func(resp *http.Response) error {
		info = infoOf(resp.Header)
		// A copy's answer carries the ETag in the body, not the header.
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if _, rest, ok := strings.Cut(string(b), "<ETag>"); ok {
			tag, _, _ := strings.Cut(rest, "</ETag>")
			info.ETag = strings.Trim(strings.ReplaceAll(tag, "&#34;", `"`), `"`)
		}
		return nil
	})
	return info, err
}

// EscapeKey percent-encodes every byte of key but unreserved characters
// and '/', as S3 SDKs do; the gateway decodes it exactly once.
func EscapeKey(key string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		ch := key[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~/", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[ch>>4])
		b.WriteByte(hexd[ch&15])
	}
	return b.String()
}

// Upload is a multipart upload in progress.
type Upload struct {
	Object Object
	ID     string
}

// Part is one uploaded part of a multipart upload.
type Part struct {
	Number int
	ETag   string
}

// CreateUpload starts a multipart upload of o with the stored headers of
// opt.
func (c *Client) CreateUpload(ctx context.Context, o Object, opt PutOptions) (*Upload, error) {
	h := branchHeader(o)
	opt.header(h)
	var id string
	r := request{method: http.MethodPost, url: c.objectURL(o, url.Values{"uploads": {""}}), header: h, payload: unsigned, retry: true}
	err := c.do(ctx, r, func(resp *http.Response) error {
		var doc struct {
			UploadID string `xml:"UploadId"`
		}
		if err := xml.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&doc); err != nil {
			return fmt.Errorf("create upload of %s: %w", o, err)
		}
		id = doc.UploadID
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Upload{Object: o, ID: id}, nil
}

// UploadPart stores size bytes of body (read from offset 0 on every
// attempt) as part n, with its CRC32C for the gateway to verify.
func (c *Client) UploadPart(ctx context.Context, u *Upload, n int, body io.ReaderAt, size int64) (Part, error) {
	h := branchHeader(u.Object)
	sum, err := crc32c(io.NewSectionReader(body, 0, size))
	if err != nil {
		return Part{}, fmt.Errorf("part %d of %s: %w", n, u.Object, err)
	}
	h.Set("x-amz-checksum-crc32c", sum)
	q := url.Values{"partNumber": {strconv.Itoa(n)}, "uploadId": {u.ID}}
	var p Part
	r := request{method: http.MethodPut, url: c.objectURL(u.Object, q), header: h, payload: unsigned, retry: true,
		body: func() io.Reader { return io.NewSectionReader(body, 0, size) }, size: size}
	err = c.do(ctx, r, func(resp *http.Response) error {
		p = Part{Number: n, ETag: resp.Header.Get("ETag")}
		return nil
	})
	return p, err
}

// CompleteUpload assembles the parts into the object's new version.
func (c *Client) CompleteUpload(ctx context.Context, u *Upload, parts []Part) (Info, error) {
	var b strings.Builder
	b.WriteString("<CompleteMultipartUpload>")
	for _, p := range parts {
		fmt.Fprintf(&b, "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", p.Number, html.EscapeString(p.ETag))
	}
	b.WriteString("</CompleteMultipartUpload>")
	body := []byte(b.String())
	sum := sha256.Sum256(body)
	var info Info
	r := request{method: http.MethodPost, url: c.objectURL(u.Object, url.Values{"uploadId": {u.ID}}), header: branchHeader(u.Object),
		payload: hex.EncodeToString(sum[:]), body: func() io.Reader { return bytes.NewReader(body) }, size: int64(len(body))}
	// Not retried: a second completion of an upload that the first one
	// finished answers NoSuchUpload. The caller falls back to a PUT.
	err := c.do(ctx, r, func(resp *http.Response) error {
		info = infoOf(resp.Header)
		etag, err := answerETag(resp, "POST "+u.Object.String())
		if err != nil {
			return fmt.Errorf("complete upload of %s: %w", u.Object, err)
		}
		info.ETag = etag
		return nil
	})
	return info, err
}

// answerETag reads the XML answer of a completion or a copy and returns
// its ETag. S3 may fail either after its 200 has started, so an Error
// document in the body is the *Error of op.
func answerETag(resp *http.Response, op string) (string, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	var doc struct {
		XMLName xml.Name
		ETag    string `xml:"ETag"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("decode answer: %w", err)
	}
	if doc.XMLName.Local == "Error" {
		return "", &Error{Op: op, Status: resp.StatusCode, Code: doc.Code, Message: doc.Message}
	}
	return strings.Trim(doc.ETag, `"`), nil
}

// AbortUpload drops an upload and its parts.
func (c *Client) AbortUpload(ctx context.Context, u *Upload) error {
	r := request{method: http.MethodDelete, url: c.objectURL(u.Object, url.Values{"uploadId": {u.ID}}), header: branchHeader(u.Object), payload: unsigned, retry: true}
	return c.do(ctx, r, nil)
}

// crc32c returns the base64 CRC32C of r, as S3 checksum headers carry it.
func crc32c(r io.Reader) (string, error) {
	sum := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	if _, err := io.Copy(sum, r); err != nil {
		return "", err
	}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], sum.Sum32())
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

// Copy makes a new version of dst with the content and stored headers of
// src (versionID "" takes src's current version), on the gateway: no
// bytes pass through the client, and none are stored twice. src may be on
// another branch or repository; its branch is named by the header-less
// alias (REPO_BRANCH) in x-amz-copy-source, since x-nas-branch names the
// destination's. src.Branch "" means, within one repository, dst's
// branch (the gateway's rule), and otherwise the repository's default.
func (c *Client) Copy(ctx context.Context, src Object, versionID string, dst Object) (Info, error) {
	h := branchHeader(dst)
	bucket := src.Repo
	if src.Branch != "" {
		bucket = branchAlias(src.Repo, src.Branch)
	}
	from := "/" + bucket + "/" + EscapeKey(src.Key)
	if versionID != "" {
		from += "?versionId=" + url.QueryEscape(versionID)
	}
	h.Set("x-amz-copy-source", from)
	var info Info
	r := request{method: http.MethodPut, url: c.objectURL(dst, nil), header: h, payload: unsigned, retry: true}
	err := c.do(ctx, r, func(resp *http.Response) error {
		info = infoOf(resp.Header)
		etag, err := answerETag(resp, "PUT "+dst.String())
		if err != nil {
			return fmt.Errorf("copy %s to %s: %w", src, dst, err)
		}
		info.ETag = etag
		return nil
	})
	return info, err
}

// branchAlias is the header-less bucket name of branch of repo: '/'
// becomes '_' and a literal '_' is doubled (the gateway's ParseAlias
// reverses it; repository names never contain '_').
func branchAlias(repo, branch string) string {
	return repo + "_" + strings.NewReplacer("_", "__", "/", "_").Replace(branch)
}
