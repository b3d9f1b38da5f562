package sigv2

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Names of the scheme.
const (
	headerPrefix = "AWS "           // Authorization: AWS AccessKeyId:Signature
	qAccessKey   = "AWSAccessKeyId" // presigned query parameters
	qSignature   = "Signature"
	qExpires     = "Expires"
	qV4Algorithm = "X-Amz-Algorithm" // a SigV4 presigned URL
	tokenName    = "x-amz-security-token"

	// MaxPresignAge bounds how far ahead of the server clock (plus the
	// skew) a presigned URL's Expires may lie: SigV4's largest
	// X-Amz-Expires, so a SigV2 URL lives no longer than a SigV4 one.
	MaxPresignAge = 7 * 24 * time.Hour
)

// param is one query parameter, as sent and decoded.
type param struct {
	rawKey, rawValue string
	hasValue         bool   // an '=' was sent
	key, value       string // decoded with query rules ('+' is a space)
}

// splitQuery splits a raw query on '&' without reordering or dropping
// anything but empty parts; a part that does not decode keeps its raw
// text as its decoded form (it can then match nothing it should not).
func splitQuery(raw string) []param {
	var ps []param
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, eq := strings.Cut(part, "=")
		ps = append(ps, param{rawKey: k, rawValue: v, hasValue: eq, key: decodeQuery(k), value: decodeQuery(v)})
	}
	return ps
}

func decodeQuery(s string) string {
	if d, err := url.QueryUnescape(s); err == nil {
		return d
	}
	return s
}

// values returns the decoded values of the parameters named name.
func values(ps []param, name string) []string {
	var vs []string
	for _, p := range ps {
		if p.key == name {
			vs = append(vs, p.value)
		}
	}
	return vs
}

// Claims reports whether r claims Signature Version 2: an Authorization
// header "AWS ...", or, without an Authorization header, an
// AWSAccessKeyId query parameter and no SigV4 X-Amz-Algorithm. Requests
// it rejects are SigV4's (or anonymous).
func Claims(r *http.Request) bool {
	if vs, ok := r.Header["Authorization"]; ok {
		return len(vs) > 0 && strings.HasPrefix(vs[0], headerPrefix)
	}
	_, raw := target(r)
	ps := splitQuery(raw)
	return len(values(ps, qAccessKey)) > 0 && len(values(ps, qV4Algorithm)) == 0
}

// claim is what a request asserts before its signature is checked.
type claim struct {
	accessKey string
	signature [sha1.Size]byte
	presigned bool
	expires   string // presigned: Expires as sent, the Date line
}

// parseHeader parses "AWS AccessKeyId:Signature". The signature is the
// text after the last colon (base64 has none).
func parseHeader(v string) (claim, error) {
	var c claim
	rest, ok := strings.CutPrefix(v, headerPrefix)
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return c, fmt.Errorf("%w: Authorization is not \"AWS AccessKeyId:Signature\"", ErrMalformedAuth)
	}
	c.accessKey = strings.TrimSpace(rest[:i])
	if c.accessKey == "" {
		return c, fmt.Errorf("%w: empty access key", ErrMalformedAuth)
	}
	var err error
	c.signature, err = decodeSignature(strings.TrimSpace(rest[i+1:]), ErrMalformedAuth)
	return c, err
}

// parseQuery reads AWSAccessKeyId, Signature and Expires, each exactly
// once, and checks Expires is a plain unix time.
func parseQuery(ps []param) (claim, error) {
	c := claim{presigned: true}
	var sig string
	for _, f := range []struct {
		name string
		dst  *string
	}{{qAccessKey, &c.accessKey}, {qSignature, &sig}, {qExpires, &c.expires}} {
		vs := values(ps, f.name)
		if len(vs) != 1 || vs[0] == "" {
			return c, fmt.Errorf("%w: %s must be given once, got %d", ErrMalformedQuery, f.name, len(vs))
		}
		*f.dst = vs[0]
	}
	if _, err := expiresAt(c.expires); err != nil {
		return c, err
	}
	// A '+' sent unencoded in the signature decodes as a space.
	var err error
	c.signature, err = decodeSignature(strings.ReplaceAll(sig, " ", "+"), ErrMalformedQuery)
	return c, err
}

// expiresAt parses Expires: decimal digits only, unix seconds.
func expiresAt(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || s[0] < '0' || s[0] > '9' || n > 1<<40 {
		return time.Time{}, fmt.Errorf("%w: Expires %q is not unix seconds", ErrMalformedQuery, clip(s))
	}
	return time.Unix(n, 0), nil
}

// decodeSignature decodes a base64 HMAC-SHA1, reporting problems as kind.
func decodeSignature(s string, kind error) ([sha1.Size]byte, error) {
	var sig [sha1.Size]byte
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != sha1.Size {
		return sig, fmt.Errorf("%w: signature must be base64 of %d bytes", kind, sha1.Size)
	}
	copy(sig[:], b)
	return sig, nil
}

// parseDate reads a request date: RFC 1123 (GMT or numeric zone), the
// other HTTP forms, or ISO 8601 basic as SigV4 sends it.
func parseDate(s string) (time.Time, error) {
	if t, err := http.ParseTime(s); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.RFC1123Z, "20060102T150405Z"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %q", ErrMissingDate, clip(s))
}

// clip shortens client-controlled text quoted in error messages.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
