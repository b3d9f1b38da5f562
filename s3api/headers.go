package s3api

import (
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentnas/nas/manifest"
)

// storedHeaders are the content headers kept with an object and returned on
// GET and HEAD.
var storedHeaders = []string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

// maxUserMeta is S3's limit on the size of user metadata.
const maxUserMeta = 2 << 10

// entryFromHeaders builds a new object's entry from its request's
// headers: metaFromHeaders and the ACL they set.
func (s *Server) entryFromHeaders(h http.Header) (*manifest.Entry, error) {
	e, err := metaFromHeaders(h)
	if err != nil {
		return nil, err
	}
	if e.ACL, err = s.requestACL(h); err != nil {
		return nil, err
	}
	return e, nil
}

// metaFromHeaders builds the header, metadata and tag fields of an entry.
func metaFromHeaders(h http.Header) (*manifest.Entry, error) {
	tags, err := parseTaggingHeader(h)
	if err != nil {
		return nil, err
	}
	e := &manifest.Entry{ContentType: h.Get("Content-Type"), Tags: tags}
	if e.ContentType == "" {
		e.ContentType = "binary/octet-stream"
	}
	for _, name := range storedHeaders {
		v := h.Get(name)
		if name == "Content-Encoding" {
			v = stripAWSChunked(v)
		}
		if v != "" {
			e.Headers = append(e.Headers, manifest.Pair{Name: name, Value: v})
		}
	}
	size := 0
	for name, vs := range h {
		rest, ok := strings.CutPrefix(name, "X-Amz-Meta-")
		if !ok {
			continue
		}
		n := strings.ToLower(rest)
		v := strings.Join(vs, ",")
		size += len(n) + len(v)
		e.Meta = append(e.Meta, manifest.Pair{Name: n, Value: v})
	}
	if size > maxUserMeta {
		return nil, s3err(http.StatusBadRequest, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (2 KB).")
	}
	return e, nil
}

// stripAWSChunked removes the aws-chunked transfer coding from a
// Content-Encoding value; it describes the request, not the object.
func stripAWSChunked(v string) string {
	if !strings.Contains(v, "aws-chunked") {
		return v
	}
	var keep []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" && p != "aws-chunked" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, ",")
}

// rejectUnsupported refuses write headers whose meaning we cannot honour,
// rather than silently dropping them.
func rejectUnsupported(h http.Header) error {
	for _, name := range []string{
		"x-amz-server-side-encryption", "x-amz-server-side-encryption-customer-algorithm",
		"x-amz-server-side-encryption-aws-kms-key-id", "x-amz-object-lock-mode",
		"x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold", "x-amz-website-redirect-location",
	} {
		if h.Get(name) != "" {
			return errNotImplemented("the " + name + " header is not supported by this gateway")
		}
	}
	return nil
}

// setObjectHeaders writes the headers of e common to GET, HEAD and errors
// about an object.
func setObjectHeaders(h http.Header, e *manifest.Entry) {
	h.Set("ETag", quote(e.ETag))
	h.Set("Last-Modified", httpTime(e.ModTime))
	h.Set("Accept-Ranges", "bytes")
	if e.VersionID != "" {
		h.Set("x-amz-version-id", e.VersionID)
	}
	h.Set("Content-Type", e.ContentType)
	for _, p := range e.Headers {
		h.Set(p.Name, p.Value)
	}
	for _, p := range e.Meta {
		h["X-Amz-Meta-"+p.Name] = []string{p.Value}
	}
	if n := partsCount(e); n > 0 {
		h.Set("x-amz-mp-parts-count", strconv.Itoa(n))
	}
	setTaggingCount(h, e)
}

func partsCount(e *manifest.Entry) int {
	if i := strings.LastIndexByte(e.ETag, '-'); i >= 0 {
		if n, err := strconv.Atoi(e.ETag[i+1:]); err == nil {
			return n
		}
	}
	return 0
}

// responseOverrides are the response-* query parameters of GetObject.
var responseOverrides = map[string]string{
	"response-content-type":        "Content-Type",
	"response-content-language":    "Content-Language",
	"response-expires":             "Expires",
	"response-cache-control":       "Cache-Control",
	"response-content-disposition": "Content-Disposition",
	"response-content-encoding":    "Content-Encoding",
}

// etagMatches reports whether an If-Match style list matches etag.
func etagMatches(list, etag string) bool {
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		p = strings.TrimPrefix(p, "W/")
		if p == "*" || strings.Trim(p, `"`) == etag {
			return true
		}
	}
	return false
}

func parseHTTPTime(v string) (time.Time, bool) {
	t, err := http.ParseTime(v)
	return t, err == nil
}

// conditions checks HTTP preconditions for GET and HEAD (RFC 7232 order,
// with S3's rule that If-Match overrides If-Unmodified-Since and
// If-None-Match overrides If-Modified-Since).
func conditions(h http.Header, e *manifest.Entry) *Error {
	mod := time.Unix(0, e.ModTime).Truncate(time.Second)
	if im := h.Get("If-Match"); im != "" {
		if !etagMatches(im, e.ETag) {
			return errPreconditionFailed()
		}
	} else if ius := h.Get("If-Unmodified-Since"); ius != "" {
		if t, ok := parseHTTPTime(ius); ok && mod.After(t) {
			return errPreconditionFailed()
		}
	}
	if inm := h.Get("If-None-Match"); inm != "" {
		if etagMatches(inm, e.ETag) {
			return errNotModified()
		}
	} else if ims := h.Get("If-Modified-Since"); ims != "" {
		if t, ok := parseHTTPTime(ims); ok && !mod.After(t) {
			return errNotModified()
		}
	}
	return nil
}

// copyConditions checks the x-amz-copy-source-if-* headers; every failure is
// PreconditionFailed.
func copyConditions(h http.Header, e *manifest.Entry) *Error {
	mod := time.Unix(0, e.ModTime).Truncate(time.Second)
	if v := h.Get("x-amz-copy-source-if-match"); v != "" && !etagMatches(v, e.ETag) {
		return errPreconditionFailed()
	}
	if v := h.Get("x-amz-copy-source-if-none-match"); v != "" && etagMatches(v, e.ETag) {
		return errPreconditionFailed()
	}
	if v := h.Get("x-amz-copy-source-if-unmodified-since"); v != "" && h.Get("x-amz-copy-source-if-match") == "" {
		if t, ok := parseHTTPTime(v); ok && mod.After(t) {
			return errPreconditionFailed()
		}
	}
	if v := h.Get("x-amz-copy-source-if-modified-since"); v != "" && h.Get("x-amz-copy-source-if-none-match") == "" {
		if t, ok := parseHTTPTime(v); ok && !mod.After(t) {
			return errPreconditionFailed()
		}
	}
	return nil
}

// byteRange is a resolved range [start, start+length).
type byteRange struct{ start, length int64 }

// parseRange resolves a Range header against size. ok is false when the
// header is absent, malformed or asks for several ranges (S3 then returns
// the whole object); an unsatisfiable range is InvalidRange.
func parseRange(v string, size int64) (byteRange, bool, *Error) {
	spec, found := strings.CutPrefix(v, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return byteRange{}, false, nil
	}
	a, b, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return byteRange{}, false, nil
	}
	if a == "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return byteRange{}, false, nil
		}
		if n == 0 || size == 0 {
			return byteRange{}, false, errInvalidRange() // nothing to satisfy it
		}
		n = min(n, size)
		return byteRange{start: size - n, length: n}, true, nil
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return byteRange{}, false, nil
	}
	end := size - 1
	if b != "" {
		e, err := strconv.ParseInt(b, 10, 64)
		if err != nil || e < start {
			return byteRange{}, false, nil
		}
		end = min(e, size-1)
	}
	if start >= size {
		return byteRange{}, false, errInvalidRange()
	}
	return byteRange{start: start, length: end - start + 1}, true, nil
}

// multipartETag returns the S3 ETag of a multipart object from its parts'
// hex MD5s: the MD5 of their concatenated binary digests, "-" and the count.
func multipartETag(md5s []string) (string, bool) {
	h := newMD5()
	for _, m := range md5s {
		b, err := hex.DecodeString(m)
		if err != nil || len(b) != 16 {
			return "", false
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)) + "-" + strconv.Itoa(len(md5s)), true
}
