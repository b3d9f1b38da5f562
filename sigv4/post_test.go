package sigv4

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"
	"time"
)

// postForm signs policy as a browser form's author does.
func postForm(ak, sk, token, policy string, at time.Time) PostForm {
	date := at.Format(scopeDateFormat)
	m := hmac.New(sha256.New, SigningKey(sk, date, testRegion, "s3"))
	m.Write([]byte(policy))
	return PostForm{Algorithm: algorithm, Credential: ak + "/" + date + "/" + testRegion + "/s3/aws4_request",
		Date: at.Format(amzDateFormat), Signature: hex.EncodeToString(m.Sum(nil)), SecurityToken: token, Policy: policy}
}

func TestVerifyPost(t *testing.T) {
	v := fixedVerifier(t0)
	ctx := context.Background()
	res, err := v.VerifyPost(ctx, postForm(tokenAK, tokenSK, testToken, "eyJwb2xpY3kiOjF9", t0), testKeys)
	if err != nil {
		t.Fatal(err)
	}
	if res.AccessKey != tokenAK || res.SessionToken != testToken || !res.Form || res.Body == nil || len(res.SignedHeaders) != 0 {
		t.Fatalf("result %+v", res)
	}
	mod := func(f func(*PostForm)) PostForm {
		p := postForm(testAK, testSK, "", "eyJwb2xpY3kiOjF9", t0)
		f(&p)
		return p
	}
	for _, tc := range []struct {
		name string
		form PostForm
		want error
	}{
		{"anonymous", PostForm{}, ErrMissingAuth},
		{"tampered policy", mod(func(p *PostForm) { p.Policy = "eyJwb2xpY3kiOjJ9" }), ErrSignatureMismatch},
		{"other secret", postForm(testAK, "wrong", "", "p", t0), ErrSignatureMismatch},
		{"unknown key", postForm("AKIDUNKNOWN", testSK, "", "p", t0), ErrUnknownKey},
		{"bad token", postForm(tokenAK, tokenSK, "forged", "p", t0), ErrInvalidToken},
		{"v2", mod(func(p *PostForm) { p.Algorithm = "AWS" }), ErrUnsupportedAuth},
		{"no algorithm", mod(func(p *PostForm) { p.Algorithm = "" }), ErrMalformedPost},
		{"no signature", mod(func(p *PostForm) { p.Signature = "" }), ErrMalformedPost},
		{"no policy", mod(func(p *PostForm) { p.Policy = "" }), ErrMalformedPost},
		{"short signature", mod(func(p *PostForm) { p.Signature = "abcd" }), ErrMalformedPost},
		{"bad credential", mod(func(p *PostForm) { p.Credential = "AK/2025/x" }), ErrMalformedPost},
		{"bad date", mod(func(p *PostForm) { p.Date = "2025-03-14" }), ErrMalformedPost},
		{"date not the scope's", mod(func(p *PostForm) { p.Date = t0.Add(48 * time.Hour).Format(amzDateFormat) }), ErrMalformedPost},
		{"future", postForm(testAK, testSK, "", "p", t0.Add(time.Hour)), ErrRequestTimeTooSkewed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.VerifyPost(ctx, tc.form, testKeys)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	// A form signed yesterday stays valid: its policy's expiration says
	// how long.
	if _, err := v.VerifyPost(ctx, postForm(testAK, testSK, "", "p", t0.Add(-30*time.Hour)), testKeys); err != nil {
		t.Fatalf("older form: %v", err)
	}
	var fe *PostFieldError
	_, err = v.VerifyPost(ctx, mod(func(p *PostForm) { p.Credential = "" }), testKeys)
	if !errors.As(err, &fe) || fe.Field != "x-amz-credential" || !fe.Missing || !errors.Is(err, ErrMalformedAuth) {
		t.Fatalf("missing credential: %v", err)
	}
}
