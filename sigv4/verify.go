package sigv4

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SecretLookup finds the secret of an access key. It is given the session
// token the request carried ("" if none) and decides whether the pair is
// valid. It returns an error wrapping ErrUnknownKey for an unknown key and
// ErrInvalidToken for a missing, bad or expired token; any other error is
// passed through by Verify, wrapped.
type SecretLookup interface {
	LookupSecret(ctx context.Context, accessKey, sessionToken string) (secret string, err error)
}

// DefaultMaxSkew is the clock skew Verify tolerates when MaxSkew is 0, the
// same as S3.
const DefaultMaxSkew = 15 * time.Minute

// maxUnhashedBody bounds the body Verify reads into memory to hash it when
// a header-signed request omits x-amz-content-sha256 (STS-style form
// posts; S3 clients always send the header).
const maxUnhashedBody = 64 << 10

// Verifier checks SigV4 signatures. Set its fields before first use; it is
// safe for concurrent use afterwards and must not be copied.
type Verifier struct {
	// Lookup resolves access keys to secrets. Required by Verify (not by
	// VerifyWith).
	Lookup SecretLookup
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxSkew is how far the request time may be from Now; 0 means
	// DefaultMaxSkew.
	MaxSkew time.Duration

	keys keyCache
}

// PayloadMode says how the payload is covered by the signature, as chosen
// by x-amz-content-sha256.
type PayloadMode int

// The payload modes.
const (
	// Unsigned is "UNSIGNED-PAYLOAD", the default for presigned URLs: the
	// body is not covered.
	Unsigned PayloadMode = iota
	// SignedPayload is a hex SHA-256 of the body; Body checks it at EOF.
	SignedPayload
	// Streaming is "STREAMING-AWS4-HMAC-SHA256-PAYLOAD": an aws-chunked body
	// whose chunks are each signed.
	Streaming
	// StreamingTrailer is "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER":
	// signed chunks followed by signed trailers.
	StreamingTrailer
	// StreamingUnsignedTrailer is "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
	// unsigned aws-chunked chunks followed by unsigned trailers.
	StreamingUnsignedTrailer
)

// String returns the x-amz-content-sha256 keyword of m.
func (m PayloadMode) String() string {
	switch m {
	case Unsigned:
		return unsignedPayload
	case SignedPayload:
		return "signed payload"
	case Streaming:
		return streamingPayload
	case StreamingTrailer:
		return streamingTrailer
	case StreamingUnsignedTrailer:
		return streamingUnsignedTrail
	}
	return "PayloadMode(" + strconv.Itoa(int(m)) + ")"
}

// chunked reports whether m uses aws-chunked framing.
func (m PayloadMode) chunked() bool { return m >= Streaming }

// Result describes a request whose signature Verify accepted.
type Result struct {
	// AccessKey, SessionToken, Region and Service are as the client signed
	// them. Verify accepts any region and service; the caller checks them.
	AccessKey, SessionToken, Region, Service string
	// SignedHeaders are the lower-case names covered by the signature.
	SignedHeaders []string
	// Presigned is true for query-string (presigned URL) authentication.
	Presigned bool
	// Form is true for a browser form's policy signature (VerifyPost):
	// no header, and no byte of the body but the policy, is covered.
	Form bool
	// Mode is how the payload is covered.
	Mode PayloadMode
	// DecodedLength is the payload length: x-amz-decoded-content-length for
	// aws-chunked bodies, else Content-Length; -1 when unknown.
	DecodedLength int64
	// ContentEncoding is the Content-Encoding header without "aws-chunked",
	// the value to store with an object.
	ContentEncoding string
	// Body is what the handler reads instead of the request body. For
	// streaming modes it yields the decoded payload, verifying each chunk
	// signature as it ends; for SignedPayload it fails at EOF with
	// ErrContentSHA256Mismatch if the hash differs; for Unsigned it is the
	// request body. Data read from it must not be trusted (committed,
	// acknowledged) until Read returns io.EOF: a bad chunk or hash is only
	// detected at the end of that chunk or body, after its bytes were
	// handed out. It is not safe for concurrent use.
	Body io.ReadCloser

	chunks *chunkedReader // nil unless Mode is a streaming mode
}

// Trailer returns the trailers of an aws-chunked body (x-amz-checksum-*),
// available once Body returned io.EOF; for signed trailers the
// x-amz-trailer-signature was verified and is not included. It returns nil
// before that and for bodies without trailers.
func (r *Result) Trailer() http.Header {
	if r.chunks == nil || r.chunks.err != io.EOF {
		return nil
	}
	return r.chunks.trailer
}

// Signed reports whether the header (any case) was covered by the
// signature.
func (r *Result) Signed(header string) bool {
	for _, h := range r.SignedHeaders {
		if strings.EqualFold(h, header) {
			return true
		}
	}
	return false
}

// Verify checks the signature of r and returns what it proved, with a Body
// the handler must read instead of r.Body. It does not read the body,
// except for header-signed requests without x-amz-content-sha256, whose
// body (at most 64 KiB) it hashes first.
//
// Errors wrap the sentinels of this package (see errors.go), or whatever
// Lookup returned.
func (v *Verifier) Verify(ctx context.Context, r *http.Request) (*Result, error) {
	return v.VerifyWith(ctx, r, v.Lookup)
}

// VerifyWith is Verify with the secret found by lookup instead of the
// Verifier's Lookup, so a caller can learn who the key belongs to (a
// lease) from the lookup it passes, without smuggling it through ctx.
func (v *Verifier) VerifyWith(ctx context.Context, r *http.Request, lookup SecretLookup) (*Result, error) {
	path, rawQuery := requestTarget(r)
	query := parseQuery(rawQuery)
	c, presigned, err := v.claimOf(r, query)
	if err != nil {
		return nil, err
	}
	if err := c.readPayload(r); err != nil {
		return nil, err
	}
	if lookup == nil {
		return nil, errors.New("sigv4: Verifier has no Lookup")
	}
	secret, err := lookup.LookupSecret(ctx, c.auth.cred.accessKey, c.token)
	if err != nil {
		return nil, fmt.Errorf("sigv4: access key %q: %w", clip(c.auth.cred.accessKey), err)
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	if c.hashBody {
		if body, err = c.hashedBody(body); err != nil {
			return nil, err
		}
	}
	scope := c.auth.cred.scope()
	key := v.keys.get(secret, c.auth.cred.date, c.auth.cred.region, c.auth.cred.service)
	creq := canonicalRequest(r, path, query, presigned, c.auth, c.payload)
	sig := requestSignature(key, c.amzDate, scope, creq)
	if !hmac.Equal(sig[:], c.auth.signature[:]) {
		return nil, ErrSignatureMismatch
	}
	return c.result(r, presigned, body, key, scope, sig), nil
}

// claimOf reads what r claims, by Authorization header or by presigned
// query (presigned), and checks its time; a request with neither is
// ErrMissingAuth.
func (v *Verifier) claimOf(r *http.Request, query []queryParam) (c claim, presigned bool, err error) {
	authHeader, hasHeader := r.Header["Authorization"]
	for _, p := range query {
		if p.key == qAlgorithm {
			presigned = true
		}
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	skew := v.MaxSkew
	if skew <= 0 {
		skew = DefaultMaxSkew
	}
	switch {
	case hasHeader && presigned:
		return c, presigned, fmt.Errorf("%w: both Authorization header and X-Amz-Algorithm query given", ErrMalformedAuth)
	case hasHeader:
		c, err = headerClaim(r, authHeader, now(), skew)
	case presigned:
		c, err = presignClaim(r, query, now(), skew)
	default:
		for _, p := range query {
			if p.key == qV2AccessKey {
				return c, presigned, fmt.Errorf("%w: got Signature Version 2 query", ErrUnsupportedAuth)
			}
		}
		return c, presigned, ErrMissingAuth
	}
	return c, presigned, err
}

// readPayload sets how the payload is covered, from x-amz-content-sha256
// (SignedPayload when the body is to be hashed here), and its length:
// x-amz-decoded-content-length for aws-chunked bodies, else
// Content-Length.
func (c *claim) readPayload(r *http.Request) error {
	var err error
	c.mode = SignedPayload
	if !c.hashBody {
		if c.mode, err = parsePayload(c.payload, c.sum[:]); err != nil {
			return err
		}
	}
	c.decoded = r.ContentLength
	if c.mode.chunked() {
		if c.decoded, err = decodedLength(r.Header); err != nil {
			return err
		}
	}
	return nil
}

// hashedBody reads a body sent without a payload hash (at most 64 KiB)
// and hashes it: the claim then carries its hash and length, and the
// body returned serves the bytes read.
func (c *claim) hashedBody(body io.ReadCloser) (io.ReadCloser, error) {
	buf, err := readSmallBody(body)
	if err != nil {
		return nil, err
	}
	c.sum = sha256.Sum256(buf)
	c.payload = hex.EncodeToString(c.sum[:])
	c.decoded = int64(len(buf))
	return bufferedBody{bytes.NewReader(buf), body}, nil
}

// result is what the verified claim proved, with the Body the handler
// reads: body itself, checked against the payload hash at EOF, or
// decoded from aws-chunked framing, chunk signatures checked with key
// and the seed signature sig.
func (c *claim) result(r *http.Request, presigned bool, body io.ReadCloser, key []byte, scope string, sig [32]byte) *Result {
	res := &Result{
		AccessKey:       c.auth.cred.accessKey,
		SessionToken:    c.token,
		Region:          c.auth.cred.region,
		Service:         c.auth.cred.service,
		SignedHeaders:   c.auth.headers,
		Presigned:       presigned,
		Mode:            c.mode,
		DecodedLength:   c.decoded,
		ContentEncoding: stripAWSChunked(r.Header.Values("Content-Encoding")),
	}
	switch c.mode {
	case Unsigned:
		res.Body = body
	case SignedPayload:
		if c.hashBody {
			res.Body = body
		} else {
			res.Body = &sha256Reader{src: body, h: sha256.New(), want: c.sum}
		}
	default:
		cr := newChunkedReader(body, c.mode, c.decoded)
		if c.mode != StreamingUnsignedTrailer {
			cr.sign(key, c.amzDate, scope, sig)
		}
		res.Body, res.chunks = cr, cr
	}
	return res
}

// canonicalRequest builds the SigV4 canonical request:
// method, path, query, headers, signed header list and payload hash, one
// per line.
func canonicalRequest(r *http.Request, path string, query []queryParam, presigned bool, auth authorization, payload string) []byte {
	b := make([]byte, 0, 512)
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = append(b, path...)
	b = append(b, '\n')
	b = canonicalQuery(b, query, presigned)
	b = append(b, '\n')
	b = canonicalHeaders(b, r, auth.headers)
	b = append(b, '\n')
	b = append(b, auth.signedHeaders...)
	b = append(b, '\n')
	b = append(b, payload...)
	return b
}

// requestSignature signs the string to sign of a canonical request.
func requestSignature(key []byte, amzDate, scope string, creq []byte) [32]byte {
	creqSum := sha256.Sum256(creq)
	sts := make([]byte, 0, 160)
	sts = append(sts, algorithm+"\n"...)
	sts = append(sts, amzDate...)
	sts = append(sts, '\n')
	sts = append(sts, scope...)
	sts = append(sts, '\n')
	sts = hex.AppendEncode(sts, creqSum[:])
	mac := hmac.New(sha256.New, key)
	mac.Write(sts)
	var sig [32]byte
	mac.Sum(sig[:0])
	return sig
}

// claim is what a request asserts before its signature is checked.
type claim struct {
	auth     authorization
	amzDate  string // request time as it enters the string to sign
	token    string // session token, "" if none
	payload  string // x-amz-content-sha256 as it enters the canonical request
	hashBody bool   // no payload hash was sent: compute it from the body

	// Set by readPayload (sum and decoded also by hashedBody).
	mode    PayloadMode
	sum     [32]byte // the body's SHA-256 (SignedPayload)
	decoded int64    // the payload's length, -1 when unknown
}

// headerClaim reads an Authorization-header request and checks its time.
func headerClaim(r *http.Request, authHeader []string, now time.Time, skew time.Duration) (claim, error) {
	var c claim
	if len(authHeader) != 1 {
		return c, fmt.Errorf("%w: %d Authorization headers", ErrMalformedAuth, len(authHeader))
	}
	var err error
	if c.auth, err = parseAuthorization(authHeader[0]); err != nil {
		return c, err
	}
	t, err := requestDate(r)
	if err != nil {
		return c, err
	}
	c.amzDate = t.Format(amzDateFormat)
	if t.Format(scopeDateFormat) != c.auth.cred.date {
		return c, fmt.Errorf("%w: credential date %s is not the request date %s", ErrMalformedAuth, c.auth.cred.date, c.amzDate)
	}
	if d := now.Sub(t); d > skew || d < -skew {
		return c, fmt.Errorf("%w: request time %s, server time %s", ErrRequestTimeTooSkewed, c.amzDate, now.UTC().Format(amzDateFormat))
	}
	c.token = r.Header.Get(qToken)
	switch vs := r.Header.Values(qContentSHA256); len(vs) {
	case 0:
		c.hashBody = true
	case 1:
		c.payload = vs[0]
	default:
		return c, fmt.Errorf("%w: %d x-amz-content-sha256 headers", ErrInvalidContentSHA256, len(vs))
	}
	return c, nil
}

// presignClaim reads a presigned-URL request and checks its validity
// window. The payload is UNSIGNED-PAYLOAD unless X-Amz-Content-Sha256 (in
// the query, else as a header) says otherwise.
func presignClaim(r *http.Request, query []queryParam, now time.Time, skew time.Duration) (claim, error) {
	var c claim
	p, err := parsePresign(query)
	if err != nil {
		return c, err
	}
	c.auth, c.token, c.amzDate = p.authorization, p.token, p.date
	t, err := time.Parse(amzDateFormat, p.date)
	if err != nil {
		return c, fmt.Errorf("%w: X-Amz-Date %q is not ISO 8601 basic format", ErrMalformedPresign, clip(p.date))
	}
	if t.Format(scopeDateFormat) != c.auth.cred.date {
		return c, fmt.Errorf("%w: credential date %s is not X-Amz-Date %s", ErrMalformedPresign, c.auth.cred.date, p.date)
	}
	if t.Sub(now) > skew {
		return c, fmt.Errorf("%w: presigned URL dated %s is in the future", ErrRequestTimeTooSkewed, p.date)
	}
	if now.After(t.Add(p.expires)) {
		return c, fmt.Errorf("%w: presigned URL expired at %s", ErrExpired, t.Add(p.expires).UTC().Format(amzDateFormat))
	}
	switch vs := r.Header.Values(qContentSHA256); {
	case p.payload != "":
		c.payload = p.payload
	case len(vs) == 1:
		c.payload = vs[0]
	case len(vs) > 1:
		return c, fmt.Errorf("%w: %d x-amz-content-sha256 headers", ErrInvalidContentSHA256, len(vs))
	default:
		c.payload = unsignedPayload
	}
	return c, nil
}

// requestDate returns the time of a header-signed request from X-Amz-Date,
// or else from Date.
func requestDate(r *http.Request) (time.Time, error) {
	if vs := r.Header.Values(qDate); len(vs) > 0 {
		t, err := time.Parse(amzDateFormat, vs[0])
		if len(vs) > 1 || err != nil {
			return time.Time{}, fmt.Errorf("%w: X-Amz-Date %q", ErrMissingDate, clip(vs[0]))
		}
		return t, nil
	}
	if d := r.Header.Get("Date"); d != "" {
		t, err := http.ParseTime(d)
		if err != nil {
			// Python's email.utils.formatdate writes the zone as "-0000".
			t, err = time.Parse(time.RFC1123Z, d)
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: Date %q", ErrMissingDate, clip(d))
		}
		return t.UTC(), nil
	}
	return time.Time{}, ErrMissingDate
}

// parsePayload classifies an x-amz-content-sha256 value; for a hex hash it
// decodes it into sum.
func parsePayload(v string, sum []byte) (PayloadMode, error) {
	switch v {
	case unsignedPayload:
		return Unsigned, nil
	case streamingPayload:
		return Streaming, nil
	case streamingTrailer:
		return StreamingTrailer, nil
	case streamingUnsignedTrail:
		return StreamingUnsignedTrailer, nil
	}
	if len(v) == 2*sha256.Size {
		if _, err := hex.Decode(sum, []byte(v)); err == nil {
			return SignedPayload, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrInvalidContentSHA256, clip(v))
}

// decodedLength parses x-amz-decoded-content-length, -1 when absent.
func decodedLength(h http.Header) (int64, error) {
	vs := h.Values("X-Amz-Decoded-Content-Length")
	if len(vs) == 0 {
		return -1, nil
	}
	n, err := strconv.ParseInt(vs[0], 10, 64)
	if len(vs) > 1 || err != nil || n < 0 || vs[0][0] == '+' {
		return 0, fmt.Errorf("%w: invalid x-amz-decoded-content-length %q", ErrMalformedChunk, clip(vs[0]))
	}
	return n, nil
}

// stripAWSChunked removes aws-chunked from a Content-Encoding list.
func stripAWSChunked(vs []string) string {
	var out []string
	for _, v := range vs {
		for e := range strings.SplitSeq(v, ",") {
			e = strings.TrimSpace(e)
			if e != "" && !strings.EqualFold(e, "aws-chunked") {
				out = append(out, e)
			}
		}
	}
	return strings.Join(out, ",")
}

// readSmallBody reads a body of at most maxUnhashedBody bytes.
func readSmallBody(body io.Reader) ([]byte, error) {
	buf, err := io.ReadAll(io.LimitReader(body, maxUnhashedBody+1))
	if err != nil {
		return nil, bodyError(err)
	}
	if len(buf) > maxUnhashedBody {
		return nil, fmt.Errorf("%w: header missing and body larger than %d bytes", ErrInvalidContentSHA256, maxUnhashedBody)
	}
	return buf, nil
}

// bufferedBody serves a body read into memory and closes the original.
type bufferedBody struct {
	*bytes.Reader
	orig io.Closer
}

// Close closes the original body.
func (b bufferedBody) Close() error { return b.orig.Close() }

// sha256Reader passes a body through and checks its SHA-256 at EOF.
type sha256Reader struct {
	src  io.ReadCloser
	h    hash.Hash
	want [32]byte
	err  error // sticky
}

// Read passes the body through, hashing it; at EOF a hash that differs
// is ErrContentSHA256Mismatch.
func (s *sha256Reader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.src.Read(p)
	s.h.Write(p[:n])
	switch {
	case err == io.EOF:
		var got [32]byte
		if !hmac.Equal(s.h.Sum(got[:0]), s.want[:]) {
			err = ErrContentSHA256Mismatch
		}
	case err != nil:
		err = bodyError(err)
	}
	s.err = err
	return n, err
}

// Close closes the body.
func (s *sha256Reader) Close() error { return s.src.Close() }

// bodyError translates a read error of the underlying body.
func bodyError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %v", ErrIncompleteBody, err)
	}
	return fmt.Errorf("sigv4: reading body: %w", err)
}
