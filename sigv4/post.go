package sigv4

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// PostForm is what a browser form (S3 POST Object) claims about its
// signature: the values of its x-amz-algorithm, x-amz-credential,
// x-amz-date, x-amz-signature, x-amz-security-token and policy fields.
// The signature covers the policy field exactly as sent, and nothing of
// the request itself.
type PostForm struct {
	Algorithm, Credential, Date, Signature, SecurityToken, Policy string
	// AccessKeyID is the AWSAccessKeyId field of a form signed with
	// Signature Version 2 (Algorithm "AWS"), whose signature field is
	// Signature; package sigv2 verifies those.
	AccessKeyID string
}

// PostFieldError is returned (wrapping ErrMalformedPost) when a POST form
// lacks a field its signature needs, or carries one that cannot be
// parsed.
type PostFieldError struct {
	Field   string // lower-case form field name
	Missing bool
	Problem string // what is wrong, when not missing
}

func (e *PostFieldError) Error() string {
	if e.Missing {
		return fmt.Sprintf("%v: field %s is missing", ErrMalformedPost, e.Field)
	}
	return fmt.Sprintf("%v: field %s: %s", ErrMalformedPost, e.Field, e.Problem)
}

// Unwrap returns ErrMalformedPost.
func (e *PostFieldError) Unwrap() error { return ErrMalformedPost }

// VerifyPost checks a browser form's signature: x-amz-signature must be
// the hex HMAC-SHA256, under the signing key of x-amz-credential's scope,
// of the policy field as sent. The credential's date must be
// x-amz-date's day, and x-amz-date no further in the future than
// MaxSkew; how long a form lives is the policy's expiration, which the
// caller checks. A form with none of the signature fields is
// ErrMissingAuth. Comparisons are constant-time. The Result has Form set
// and an empty Body: the caller reads the file from the form.
func (v *Verifier) VerifyPost(ctx context.Context, f PostForm, lookup SecretLookup) (*Result, error) {
	cred, sig, err := v.postClaim(f)
	if err != nil {
		return nil, err
	}
	if lookup == nil {
		return nil, errors.New("sigv4: VerifyPost without a SecretLookup")
	}
	secret, err := lookup.LookupSecret(ctx, cred.accessKey, f.SecurityToken)
	if err != nil {
		return nil, fmt.Errorf("sigv4: access key %q: %w", clip(cred.accessKey), err)
	}
	m := hmac.New(sha256.New, v.keys.get(secret, cred.date, cred.region, cred.service))
	m.Write([]byte(f.Policy))
	if !hmac.Equal(m.Sum(nil), sig[:]) {
		return nil, ErrSignatureMismatch
	}
	return &Result{AccessKey: cred.accessKey, SessionToken: f.SecurityToken, Region: cred.region, Service: cred.service,
		Form: true, Mode: Unsigned, DecodedLength: -1, Body: http.NoBody}, nil
}

// postClaim parses the signature fields of a form and checks its date.
func (v *Verifier) postClaim(f PostForm) (credential, [32]byte, error) {
	var sig [32]byte
	if f.Algorithm == "" && f.Credential == "" && f.Date == "" && f.Signature == "" && f.Policy == "" {
		return credential{}, sig, fmt.Errorf("%w: the form carries no signature", ErrMissingAuth)
	}
	if f.Algorithm != "" && f.Algorithm != algorithm {
		return credential{}, sig, fmt.Errorf("%w: the form is signed with %q", ErrUnsupportedAuth, clip(f.Algorithm))
	}
	for _, fd := range []struct{ name, v string }{
		{"x-amz-algorithm", f.Algorithm}, {"x-amz-credential", f.Credential}, {"x-amz-date", f.Date},
		{"x-amz-signature", f.Signature}, {"policy", f.Policy},
	} {
		if fd.v == "" {
			return credential{}, sig, &PostFieldError{Field: fd.name, Missing: true}
		}
	}
	cred, err := parseCredential(f.Credential)
	if err != nil {
		return cred, sig, &PostFieldError{Field: "x-amz-credential", Problem: err.Error()}
	}
	if err := v.postDate(f.Date, cred.date); err != nil {
		return cred, sig, err
	}
	if len(f.Signature) != 2*len(sig) {
		return cred, sig, &PostFieldError{Field: "x-amz-signature", Problem: "must be 64 hex digits"}
	}
	if _, err := hex.Decode(sig[:], []byte(f.Signature)); err != nil {
		return cred, sig, &PostFieldError{Field: "x-amz-signature", Problem: "must be 64 hex digits"}
	}
	return cred, sig, nil
}

// postDate checks x-amz-date against the credential's day and the clock.
func (v *Verifier) postDate(date, credDate string) error {
	t, err := time.Parse(amzDateFormat, date)
	if err != nil {
		return &PostFieldError{Field: "x-amz-date", Problem: fmt.Sprintf("%q is not ISO 8601 basic format (20060102T150405Z)", clip(date))}
	}
	if t.Format(scopeDateFormat) != credDate {
		return &PostFieldError{Field: "x-amz-credential", Problem: fmt.Sprintf("credential date %s is not the day of x-amz-date %s", credDate, date)}
	}
	now, skew := time.Now, v.MaxSkew
	if v.Now != nil {
		now = v.Now
	}
	if skew == 0 {
		skew = DefaultMaxSkew
	}
	if t.Sub(now()) > skew {
		return fmt.Errorf("%w: the form is dated %s, in the future", ErrRequestTimeTooSkewed, date)
	}
	return nil
}
