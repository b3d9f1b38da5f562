package sigv2

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/sigv4"
)

// Verifier checks Signature Version 2 signatures. Set its fields before
// first use; it is safe for concurrent use afterwards.
type Verifier struct {
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxSkew is how far a request's date may be from Now, and how far
	// past MaxPresignAge a presigned URL's Expires may lie; 0 means
	// sigv4.DefaultMaxSkew, the SigV4 verifier's.
	MaxSkew time.Duration
	// Domains are the virtual-host domains of the S3 endpoint (s3api's
	// Config.Domains): a Host "BUCKET.DOMAIN" signs "/BUCKET" before the
	// path.
	Domains []string
}

// Verify checks the SigV2 signature of r, with the secret (and the
// session token's validity) from lookup, and returns what it proved: the
// payload is never covered (sigv4.Unsigned) and Body is r.Body. Errors
// wrap this package's sentinels (and so sigv4's), or what lookup
// returned.
func (v *Verifier) Verify(ctx context.Context, r *http.Request, lookup sigv4.SecretLookup) (*sigv4.Result, error) {
	path, rawQuery := target(r)
	ps := splitQuery(rawQuery)
	if err := plainSubresources(ps); err != nil {
		return nil, err
	}
	c, err := v.claimOf(r, ps)
	if err != nil {
		return nil, err
	}
	if err := checkPayload(r.Header); err != nil {
		return nil, err
	}
	if lookup == nil {
		return nil, errors.New("sigv2: no SecretLookup")
	}
	amz := amzHeaders(r.Header, ps, c.presigned)
	token := amzValue(amz, tokenName)
	secret, err := lookup.LookupSecret(ctx, c.accessKey, token)
	if err != nil {
		return nil, fmt.Errorf("sigv2: access key %q: %w", clip(c.accessKey), err)
	}
	sts := stringToSign(r, c, ps, amz, canonicalResource(r.Host, v.Domains, path, ps))
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(sts)
	if !hmac.Equal(mac.Sum(nil), c.signature[:]) {
		return nil, ErrSignatureMismatch
	}
	return result(r, c, token, amz), nil
}

// claimOf reads what r claims, by Authorization header or by presigned
// query, and checks its time.
func (v *Verifier) claimOf(r *http.Request, ps []param) (claim, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	skew := v.MaxSkew
	if skew <= 0 {
		skew = sigv4.DefaultMaxSkew
	}
	authHeader, hasHeader := r.Header["Authorization"]
	if !hasHeader {
		return queryClaim(ps, now(), skew)
	}
	switch {
	case len(authHeader) != 1:
		return claim{}, fmt.Errorf("%w: %d Authorization headers", ErrMalformedAuth, len(authHeader))
	case len(values(ps, qAccessKey)) > 0 || len(values(ps, qV4Algorithm)) > 0:
		return claim{}, fmt.Errorf("%w: both Authorization header and query authentication given", ErrMalformedAuth)
	}
	c, err := parseHeader(authHeader[0])
	if err != nil {
		return c, err
	}
	t, err := requestDate(r.Header)
	if err != nil {
		return c, err
	}
	if d := now().Sub(t); d > skew || d < -skew {
		return c, fmt.Errorf("%w: request time %s, server time %s", ErrRequestTimeTooSkewed,
			t.UTC().Format(http.TimeFormat), now().UTC().Format(http.TimeFormat))
	}
	return c, nil
}

// queryClaim reads a presigned URL and checks Expires: not passed, and
// not further ahead than MaxPresignAge (plus the skew).
func queryClaim(ps []param, now time.Time, skew time.Duration) (claim, error) {
	c, err := parseQuery(ps)
	if err != nil {
		return c, err
	}
	exp, _ := expiresAt(c.expires) // checked by parseQuery
	switch {
	case now.After(exp):
		return c, fmt.Errorf("%w: presigned URL expired at %s", ErrExpired, exp.UTC().Format(http.TimeFormat))
	case exp.Sub(now) > MaxPresignAge+skew:
		return c, fmt.Errorf("%w: Expires %s is more than %s ahead", ErrMalformedQuery, exp.UTC().Format(http.TimeFormat), MaxPresignAge)
	}
	return c, nil
}

// requestDate returns the time of a header-signed request: x-amz-date
// when sent, else Date.
func requestDate(h http.Header) (time.Time, error) {
	d := h.Get("X-Amz-Date")
	if d == "" {
		d = h.Get("Date")
	}
	if d == "" {
		return time.Time{}, ErrMissingDate
	}
	return parseDate(d)
}

// checkPayload refuses what SigV2 cannot cover: a payload hash (other
// than UNSIGNED-PAYLOAD) or an aws-chunked body, which would otherwise be
// stored unchecked or with its framing.
func checkPayload(h http.Header) error {
	for _, v := range h.Values("X-Amz-Content-Sha256") {
		if v != "UNSIGNED-PAYLOAD" {
			return fmt.Errorf("%w: x-amz-content-sha256 %q", ErrPayload, clip(v))
		}
	}
	if len(h.Values("X-Amz-Decoded-Content-Length")) > 0 {
		return fmt.Errorf("%w: x-amz-decoded-content-length", ErrPayload)
	}
	for _, v := range h.Values("Content-Encoding") {
		for e := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(e), "aws-chunked") {
				return fmt.Errorf("%w: Content-Encoding aws-chunked", ErrPayload)
			}
		}
	}
	return nil
}

// result is what a verified claim proved: the headers the string to sign
// covered and an unsigned payload.
func result(r *http.Request, c claim, token string, amz []header) *sigv4.Result {
	var signed []string
	for _, h := range amz {
		if h.fromHeader {
			signed = append(signed, h.name)
		}
	}
	for _, n := range []string{"Content-Md5", "Content-Type"} {
		if len(r.Header.Values(n)) > 0 {
			signed = append(signed, strings.ToLower(n))
		}
	}
	if !c.presigned && amzValue(amz, "x-amz-date") == "" {
		signed = append(signed, "date")
	}
	body := r.Body
	if body == nil {
		body = http.NoBody
	}
	return &sigv4.Result{
		AccessKey:       c.accessKey,
		SessionToken:    token,
		SignedHeaders:   signed,
		Presigned:       c.presigned,
		Mode:            sigv4.Unsigned,
		DecodedLength:   r.ContentLength,
		ContentEncoding: strings.Join(r.Header.Values("Content-Encoding"), ","),
		Body:            body,
	}
}
