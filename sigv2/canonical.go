package sigv2

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentnas/nas/sigv4"
)

// subresources are the query parameters the canonicalized resource keeps:
// AWS's documented list, the response-* overrides, and what botocore's
// HmacV1Auth and MinIO add, so a request any of them signed verifies. The
// rest of the query is not signed (and carries nothing the door trusts).
var subresources = map[string]bool{
	"accelerate": true, "acl": true, "analytics": true, "cors": true, "defaultObjectAcl": true,
	"delete": true, "encryption": true, "inventory": true, "legal-hold": true, "lifecycle": true,
	"location": true, "logging": true, "metrics": true, "notification": true, "object-lock": true,
	"partNumber": true, "policy": true, "replication": true, "requestPayment": true, "restore": true,
	"retention": true, "select": true, "select-type": true, "storageClass": true, "tagging": true,
	"torrent": true, "uploadId": true, "uploads": true, "versionId": true, "versioning": true,
	"versions": true, "website": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// header is one canonicalized amz header: lower-case name, values
// trimmed and joined by commas, and whether it came from the request's
// headers (not the query).
type header struct {
	name, value string
	fromHeader  bool
}

// amzHeaders collects the x-amz-* headers, sorted by name. For a
// presigned URL the x-amz-* query parameters count too (botocore moves
// a presigned request's headers, the session token among them, into the
// query), except where a header of the same name was sent.
func amzHeaders(h http.Header, ps []param, presigned bool) []header {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic when two spellings lower-case alike
	byName := map[string]*header{}
	add := func(name, value string, fromHeader bool) {
		if x := byName[name]; x != nil {
			x.value += "," + value
			return
		}
		byName[name] = &header{name, value, fromHeader}
	}
	for _, k := range keys {
		if n := strings.ToLower(k); strings.HasPrefix(n, "x-amz-") {
			for _, v := range h[k] {
				add(n, strings.TrimSpace(v), true)
			}
		}
	}
	for _, p := range ps {
		n := strings.ToLower(p.key)
		if presigned && strings.HasPrefix(n, "x-amz-") && (byName[n] == nil || !byName[n].fromHeader) {
			add(n, strings.TrimSpace(p.value), false)
		}
	}
	out := make([]header, 0, len(byName))
	for _, x := range byName {
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b header) int { return strings.Compare(a.name, b.name) })
	return out
}

// amzValue returns the value of the amz header name, "" if absent.
func amzValue(hs []header, name string) string {
	for _, h := range hs {
		if h.name == name {
			return h.value
		}
	}
	return ""
}

// stringToSign builds Method, Content-MD5, Content-Type and Date lines,
// the amz headers and the resource. The Date line is Expires for a
// presigned URL, empty when x-amz-date is sent, else the Date header.
func stringToSign(r *http.Request, c claim, ps []param, amz []header, resource []byte) []byte {
	date := r.Header.Get("Date")
	switch {
	case c.presigned:
		date = c.expires
	case amzValue(amz, "x-amz-date") != "":
		date = ""
	}
	md5, ctype := standard(r.Header, ps, c.presigned, "Content-Md5"), standard(r.Header, ps, c.presigned, "Content-Type")
	b := make([]byte, 0, 256+len(resource))
	for _, line := range []string{r.Method, md5, ctype, date} {
		b = append(b, strings.TrimSpace(line)...)
		b = append(b, '\n')
	}
	for _, h := range amz {
		b = append(b, h.name...)
		b = append(b, ':')
		b = append(b, h.value...)
		b = append(b, '\n')
	}
	return append(b, resource...)
}

// standard returns the Content-MD5 or Content-Type line: the header,
// else for a presigned URL the query parameter botocore moves it to.
func standard(h http.Header, ps []param, presigned bool, name string) string {
	if v := h.Get(name); v != "" || !presigned {
		return v
	}
	for _, p := range ps {
		if strings.EqualFold(p.key, name) {
			return p.value
		}
	}
	return ""
}

// canonicalResource is "/bucket" for a virtual-host request, the path as
// sent, and the signed sub-resources, stably sorted by name, values
// decoded as botocore does (percent escapes only). A path-style request
// to a bucket itself ("/bucket") signs "/bucket/", as S3 requires and
// botocore's authPath does.
func canonicalResource(host string, domains []string, path string, ps []param) []byte {
	b := make([]byte, 0, len(path)+64)
	if bucket := sigv4.VirtualHostBucket(host, domains); bucket != "" {
		b = append(b, '/')
		b = append(b, bucket...)
	}
	b = append(b, path...)
	if len(b) == len(path) && len(path) > 1 && strings.IndexByte(path[1:], '/') < 0 {
		b = append(b, '/')
	}
	var sub []param
	for _, p := range ps {
		if subresources[p.rawKey] {
			sub = append(sub, p)
		}
	}
	slices.SortStableFunc(sub, func(x, y param) int { return strings.Compare(x.rawKey, y.rawKey) })
	for i, p := range sub {
		b = append(b, "?&"[min(i, 1)])
		b = append(b, p.rawKey...)
		if p.hasValue {
			b = append(b, '=')
			b = append(b, unquote(p.rawValue)...)
		}
	}
	return b
}

// plainSubresources refuses a sub-resource parameter that the signature
// and the server would read differently: a name written with %XX escapes
// (the signature matches names as sent, the server routes on decoded
// ones, so "version%49d" would be an unsigned versionId), or a value with
// '+' (signed as '+', read as a space).
func plainSubresources(ps []param) error {
	for _, p := range ps {
		if subresources[p.key] && (p.rawKey != p.key || strings.ContainsRune(p.rawValue, '+')) {
			return fmt.Errorf("%w: sub-resource %q must be sent unescaped, its value without '+'", ErrSignatureMismatch, p.key)
		}
	}
	return nil
}

// unquote decodes %XX escapes and leaves anything else as it is, '+'
// included, as Python's urllib.parse.unquote does for botocore.
func unquote(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// target returns the path and raw query as the client sent them: from
// RequestURI when a server read the request, else from the URL.
func target(r *http.Request) (path, query string) {
	uri := r.RequestURI
	if uri == "" || uri == "*" {
		path, query = r.URL.EscapedPath(), r.URL.RawQuery
	} else {
		if uri[0] != '/' {
			// absolute-form: scheme://authority/path?query
			if i := strings.Index(uri, "://"); i >= 0 {
				rest := uri[i+3:]
				uri = ""
				if j := strings.IndexAny(rest, "/?"); j >= 0 {
					uri = rest[j:]
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
