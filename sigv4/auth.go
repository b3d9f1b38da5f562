package sigv4

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Fixed strings of the AWS4-HMAC-SHA256 scheme.
const (
	algorithm       = "AWS4-HMAC-SHA256"
	scopeTerminator = "aws4_request"
	amzDateFormat   = "20060102T150405Z"
	scopeDateFormat = "20060102"
	maxPresignAge   = 7 * 24 * 60 * 60 // seconds; X-Amz-Expires upper bound

	unsignedPayload        = "UNSIGNED-PAYLOAD"
	streamingPayload       = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingTrailer       = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrail = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256            = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// Query parameters of a presigned URL.
const (
	qAlgorithm     = "X-Amz-Algorithm"
	qCredential    = "X-Amz-Credential"
	qDate          = "X-Amz-Date"
	qExpires       = "X-Amz-Expires"
	qSignedHeaders = "X-Amz-SignedHeaders"
	qSignature     = "X-Amz-Signature"
	qToken         = "X-Amz-Security-Token"
	qContentSHA256 = "X-Amz-Content-Sha256"
	qV2AccessKey   = "AWSAccessKeyId"
)

// credential is the parsed Credential (X-Amz-Credential) value:
// AK/YYYYMMDD/region/service/aws4_request.
type credential struct {
	accessKey string
	date      string // YYYYMMDD, as sent
	region    string
	service   string
}

// scope returns date/region/service/aws4_request.
func (c credential) scope() string {
	return c.date + "/" + c.region + "/" + c.service + "/" + scopeTerminator
}

// authorization is what a request claims about its signature, from either
// the Authorization header or the presigned query.
type authorization struct {
	cred          credential
	signedHeaders string   // as sent, the SignedHeaders line of the canonical request
	headers       []string // signedHeaders split on ';', lower-cased
	signature     [32]byte
}

// parseAuthorization parses an Authorization header value:
//
//	AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=<64 hex>
//
// The three fields may come in any order, separated by commas and/or
// spaces.
func parseAuthorization(v string) (authorization, error) {
	var a authorization
	rest, ok := strings.CutPrefix(v, algorithm)
	if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		switch {
		case strings.TrimSpace(v) == "":
			return a, fmt.Errorf("%w: empty Authorization header", ErrMalformedAuth)
		case strings.HasPrefix(v, "AWS "):
			return a, fmt.Errorf("%w: got Signature Version 2", ErrUnsupportedAuth)
		}
		alg, _, _ := strings.Cut(v, " ")
		if len(alg) > 32 {
			alg = alg[:32]
		}
		return a, fmt.Errorf("%w: got %q", ErrUnsupportedAuth, alg)
	}
	var cred, signed, sig string
	var seen [3]bool
	for f := range strings.FieldsFuncSeq(rest, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return a, fmt.Errorf("%w: Authorization component %q is not key=value", ErrMalformedAuth, clip(f))
		}
		var i int
		switch k {
		case "Credential":
			i, cred = 0, val
		case "SignedHeaders":
			i, signed = 1, val
		case "Signature":
			i, sig = 2, val
		default:
			return a, fmt.Errorf("%w: unknown Authorization component %q", ErrMalformedAuth, clip(k))
		}
		if seen[i] {
			return a, fmt.Errorf("%w: duplicate %s in Authorization", ErrMalformedAuth, k)
		}
		seen[i] = true
	}
	for i, name := range []string{"Credential", "SignedHeaders", "Signature"} {
		if !seen[i] {
			return a, fmt.Errorf("%w: Authorization lacks %s", ErrMalformedAuth, name)
		}
	}
	return a.fill(cred, signed, sig, ErrMalformedAuth)
}

// fill parses the three signature fields shared by header and query
// authentication, reporting problems as kind.
func (a authorization) fill(cred, signed, sig string, kind error) (authorization, error) {
	var err error
	if a.cred, err = parseCredential(cred); err != nil {
		return a, fmt.Errorf("%w: %v", kind, err)
	}
	if a.headers, err = parseSignedHeaders(signed); err != nil {
		return a, fmt.Errorf("%w: %v", kind, err)
	}
	a.signedHeaders = signed
	if len(sig) != 2*len(a.signature) {
		return a, fmt.Errorf("%w: signature must be 64 hex digits", kind)
	}
	if _, err := hex.Decode(a.signature[:], []byte(sig)); err != nil {
		return a, fmt.Errorf("%w: signature must be 64 hex digits", kind)
	}
	return a, nil
}

// parseCredential splits AK/YYYYMMDD/region/service/aws4_request. The
// access key is everything before the last four components.
func parseCredential(s string) (credential, error) {
	var c credential
	parts := strings.Split(s, "/")
	n := len(parts)
	if n < 5 {
		return c, fmt.Errorf("credential %q is not AK/date/region/service/aws4_request", clip(s))
	}
	c.accessKey = strings.Join(parts[:n-4], "/")
	c.date, c.region, c.service = parts[n-4], parts[n-3], parts[n-2]
	switch {
	case c.accessKey == "":
		return c, fmt.Errorf("credential has an empty access key")
	case parts[n-1] != scopeTerminator:
		return c, fmt.Errorf("credential scope must end in %s, got %q", scopeTerminator, clip(parts[n-1]))
	case c.region == "":
		return c, fmt.Errorf("credential has an empty region")
	case c.service == "":
		return c, fmt.Errorf("credential has an empty service")
	}
	if _, err := time.Parse(scopeDateFormat, c.date); err != nil || len(c.date) != len(scopeDateFormat) {
		return c, fmt.Errorf("credential date %q is not YYYYMMDD", clip(c.date))
	}
	return c, nil
}

// parseSignedHeaders splits the SignedHeaders list and checks host is in it.
func parseSignedHeaders(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("SignedHeaders is empty")
	}
	hs := strings.Split(s, ";")
	host := false
	for i, h := range hs {
		if h == "" {
			return nil, fmt.Errorf("SignedHeaders %q has an empty name", clip(s))
		}
		for j := 0; j < len(h); j++ {
			if !isTokenChar(h[j]) {
				return nil, fmt.Errorf("SignedHeaders %q has an invalid name", clip(s))
			}
		}
		hs[i] = strings.ToLower(h)
		host = host || hs[i] == "host"
	}
	if !host {
		return nil, fmt.Errorf("SignedHeaders must include host")
	}
	return hs, nil
}

// presign is the parsed query of a presigned URL.
type presign struct {
	authorization
	date    string // X-Amz-Date as sent
	expires time.Duration
	token   string
	payload string // X-Amz-Content-Sha256, "" when absent
}

// parsePresign reads the X-Amz-* parameters of a presigned URL.
func parsePresign(q []queryParam) (presign, error) {
	var p presign
	var alg, cred, signed, sig, expires string
	fields := []struct {
		name     string
		dst      *string
		required bool
	}{
		{qAlgorithm, &alg, true},
		{qCredential, &cred, true},
		{qDate, &p.date, true},
		{qExpires, &expires, true},
		{qSignedHeaders, &signed, true},
		{qSignature, &sig, true},
		{qToken, &p.token, false},
		{qContentSHA256, &p.payload, false},
	}
	for _, f := range fields {
		n := 0
		for _, kv := range q {
			if kv.key == f.name {
				*f.dst = kv.value
				n++
			}
		}
		switch {
		case n > 1:
			return p, fmt.Errorf("%w: %s given %d times", ErrMalformedPresign, f.name, n)
		case n == 0 && f.required:
			return p, fmt.Errorf("%w: missing %s", ErrMalformedPresign, f.name)
		}
	}
	if alg != algorithm {
		return p, fmt.Errorf("%w: X-Amz-Algorithm %q", ErrUnsupportedAuth, clip(alg))
	}
	secs, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || secs < 1 || secs > maxPresignAge {
		return p, fmt.Errorf("%w: X-Amz-Expires must be an integer from 1 to %d, got %q", ErrMalformedPresign, maxPresignAge, clip(expires))
	}
	p.expires = time.Duration(secs) * time.Second
	p.authorization, err = p.fill(cred, signed, sig, ErrMalformedPresign)
	return p, err
}

// isTokenChar reports whether c may appear in an HTTP header name.
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// clip shortens client-controlled text quoted in error messages.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
