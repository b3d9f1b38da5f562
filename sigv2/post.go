package sigv2

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/sigv4"
)

// PostForm is what a browser form signed with Signature Version 2 claims:
// its AWSAccessKeyId, signature, x-amz-security-token and policy fields.
// The signature is the base64 HMAC-SHA1, under the secret, of the policy
// field exactly as sent; how long the form lives is the policy's
// expiration, which the caller checks.
type PostForm struct {
	AccessKeyID, Signature, SecurityToken, Policy string
}

// VerifyPost checks a SigV2 form's signature with the secret (and the
// session token's validity) from lookup, in constant time. The Result has
// Form set and an empty Body: the caller reads the file from the form.
func (v *Verifier) VerifyPost(ctx context.Context, f PostForm, lookup sigv4.SecretLookup) (*sigv4.Result, error) {
	for _, fd := range []struct{ name, v string }{
		{"awsaccesskeyid", f.AccessKeyID}, {"signature", f.Signature}, {"policy", f.Policy},
	} {
		if fd.v == "" {
			return nil, &sigv4.PostFieldError{Field: fd.name, Missing: true}
		}
	}
	// A signature that is not even a base64 HMAC-SHA1 does not match
	// either: S3 answers it as a mismatch (403), not as a malformed form.
	sig, err := base64.StdEncoding.DecodeString(f.Signature)
	if err != nil || len(sig) != sha1.Size {
		sig = make([]byte, sha1.Size)
	}
	if lookup == nil {
		return nil, errors.New("sigv2: no SecretLookup")
	}
	secret, err := lookup.LookupSecret(ctx, f.AccessKeyID, f.SecurityToken)
	if err != nil {
		return nil, fmt.Errorf("sigv2: access key %q: %w", clip(f.AccessKeyID), err)
	}
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(f.Policy))
	if !hmac.Equal(mac.Sum(nil), sig) {
		return nil, ErrSignatureMismatch
	}
	return &sigv4.Result{AccessKey: f.AccessKeyID, SessionToken: f.SecurityToken, Form: true,
		Mode: sigv4.Unsigned, DecodedLength: -1, Body: http.NoBody}, nil
}
