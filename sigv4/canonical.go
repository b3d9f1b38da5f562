package sigv4

import (
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// queryParam is one decoded name=value pair of the query string, in wire
// order.
type queryParam struct{ key, value string }

// parseQuery splits a raw query on '&' and decodes each side the way
// url.ParseQuery does ('+' is a space). A component with an invalid escape
// is kept raw, so it is re-encoded rather than rejected and simply fails
// the signature if the client meant something else. A parameter without
// '=' has an empty value; empty components are skipped.
func parseQuery(raw string) []queryParam {
	if raw == "" {
		return nil
	}
	ps := make([]queryParam, 0, strings.Count(raw, "&")+1)
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		ps = append(ps, queryParam{unescapeQuery(k), unescapeQuery(v)})
	}
	return ps
}

func unescapeQuery(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s
	}
	return u
}

// requestTarget returns the path and query exactly as the client sent them
// on the wire. S3 signs the path as sent, neither normalised nor decoded,
// so it comes from RequestURI when the request was read by a server, and
// from URL.EscapedPath otherwise (requests built in process).
func requestTarget(r *http.Request) (path, query string) {
	uri := r.RequestURI
	if uri == "" || uri == "*" {
		path, query = r.URL.EscapedPath(), r.URL.RawQuery
	} else {
		if uri[0] != '/' {
			// absolute-form: scheme://authority/path?query
			if i := strings.Index(uri, "://"); i >= 0 {
				rest := uri[i+3:]
				if j := strings.IndexAny(rest, "/?"); j >= 0 {
					uri = rest[j:]
				} else {
					uri = ""
				}
			}
		}
		path, query, _ = strings.Cut(uri, "?")
	}
	if path == "" {
		path = "/"
	}
	return path, query
}

// canonicalQuery encodes every parameter with AWS URI encoding and sorts
// the encoded pairs by name, then value. With presigned, X-Amz-Signature is
// left out.
func canonicalQuery(dst []byte, ps []queryParam, presigned bool) []byte {
	if len(ps) == 0 {
		return dst
	}
	enc := make([]queryParam, 0, len(ps))
	for _, p := range ps {
		if presigned && p.key == qSignature {
			continue
		}
		enc = append(enc, queryParam{awsEscape(p.key), awsEscape(p.value)})
	}
	slices.SortFunc(enc, func(a, b queryParam) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	for i, p := range enc {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, p.key...)
		dst = append(dst, '=')
		dst = append(dst, p.value...)
	}
	return dst
}

const upperHex = "0123456789ABCDEF"

// awsEscape percent-encodes every byte outside A-Za-z0-9-_.~ with upper-case
// hex, as SigV4 requires (space is %20, never '+').
func awsEscape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return string(b)
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// canonicalHeaders appends "name:value\n" for every signed header, in the
// order the client listed them. Values are trimmed, runs of spaces
// collapsed, and repeated headers joined with ','.
func canonicalHeaders(dst []byte, r *http.Request, names []string) []byte {
	for _, name := range names {
		dst = append(dst, name...)
		dst = append(dst, ':')
		for i, v := range headerValues(r, name) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTrimmed(dst, v)
		}
		dst = append(dst, '\n')
	}
	return dst
}

// headerValues returns the values of a signed header (lower-case name) as
// the client sent them. Go's server moves Host to r.Host and
// Transfer-Encoding to r.TransferEncoding, and in-process requests may only
// carry r.ContentLength, so those are rebuilt.
func headerValues(r *http.Request, name string) []string {
	switch name {
	case "host":
		host := r.Host
		if host == "" && r.URL != nil {
			host = r.URL.Host
		}
		return []string{host}
	case "content-length":
		if vs := r.Header["Content-Length"]; len(vs) > 0 {
			return vs
		}
		if r.ContentLength >= 0 {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
		return nil
	case "transfer-encoding":
		if vs := r.Header["Transfer-Encoding"]; len(vs) > 0 {
			return vs
		}
		if len(r.TransferEncoding) > 0 {
			return []string{strings.Join(r.TransferEncoding, ",")}
		}
		return nil
	}
	if vs, ok := r.Header[textproto.CanonicalMIMEHeaderKey(name)]; ok {
		return vs
	}
	// Keys Go could not canonicalise are stored as received.
	for k, vs := range r.Header {
		if strings.EqualFold(k, name) {
			return vs
		}
	}
	return nil
}

// appendTrimmed appends v without leading and trailing spaces and with
// every run of spaces collapsed to one.
func appendTrimmed(dst []byte, v string) []byte {
	v = strings.Trim(v, " \t")
	space := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		dst = append(dst, c)
	}
	return dst
}
