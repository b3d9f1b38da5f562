package e2e_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentnas/nas/nastest"
)

// Section 3: only a lease's own access key, secret and session token
// authenticate it, and only while it is live.

var b64 = base64.RawURLEncoding

// jwtParts splits a session token into its decoded header and claims.
func jwtParts(t testing.TB, tok string) (map[string]any, map[string]any, string) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("session token is not a JWT: %q", tok)
	}
	var h, c map[string]any
	for i, v := range []*map[string]any{&h, &c} {
		raw, err := b64.DecodeString(parts[i])
		must(t, err)
		must(t, json.Unmarshal(raw, v))
	}
	return h, c, parts[2]
}

// jwtEncode builds a token from header, claims and signature.
func jwtEncode(t testing.TB, h, c map[string]any, sig string) string {
	t.Helper()
	hb, err := json.Marshal(h)
	must(t, err)
	cb, err := json.Marshal(c)
	must(t, err)
	return b64.EncodeToString(hb) + "." + b64.EncodeToString(cb) + "." + sig
}

// jwtHS256 signs header and claims with key.
func jwtHS256(t testing.TB, h, c map[string]any, key []byte) string {
	t.Helper()
	unsigned := strings.TrimSuffix(jwtEncode(t, h, c, ""), ".")
	m := hmac.New(sha256.New, key)
	m.Write([]byte(unsigned))
	return unsigned + "." + b64.EncodeToString(m.Sum(nil))
}

func TestLeaseCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "creds"
	createBucket(t, own, repo)
	put(t, own, repo, "shared/launch/a.txt", []byte("launch-a"))
	oc.commit(repo, "main", "seed")
	mk := func(ttl string) *leaseInfo {
		return oc.newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": ttl,
			"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read", "write"}})
	}
	a, b := mk("1h"), mk("1h")
	exp := mk("2s") // expires during the test
	rev := mk("1h") // revoked during the test
	ownerOn := func(li *leaseInfo) *s3.Client {
		return newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}})
	}

	// Presigned URLs made while the leases are live.
	presign := func(li *leaseInfo) (getURL, putURL string, putHdr http.Header) {
		pc := s3.NewPresignClient(leaseS3(t, srv, li))
		g, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/a.txt")}, s3.WithPresignExpires(time.Hour))
		must(t, err)
		p, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/late")}, s3.WithPresignExpires(time.Hour))
		must(t, err)
		return g.URL, p.URL, p.SignedHeader
	}
	expGet, expPut, expPutHdr := presign(exp)
	revGet, revPut, revPutHdr := presign(rev)
	aGet, _, _ := presign(a)
	for _, u := range []string{expGet, revGet, aGet} {
		if st, body := httpGet(t, u, nil); st != 200 || string(body) != "launch-a" {
			t.Fatalf("presigned GET of a live lease: %d %s", st, body)
		}
	}

	t.Run("Forgeries", func(t *testing.T) {
		h, c, sig := jwtParts(t, a.Creds.SessionToken)
		if c["lid"] != a.ID || c["sub"] != a.Creds.AccessKeyID {
			t.Fatalf("unexpected token claims %v", c)
		}
		if strings.Contains(a.Creds.SessionToken, a.Creds.SecretAccessKey) {
			t.Fatal("the session token carries the secret")
		}
		edit := func(k string, v any) string {
			c2 := map[string]any{}
			for kk, vv := range c {
				c2[kk] = vv
			}
			c2[k] = v
			return jwtEncode(t, h, c2, sig)
		}
		none := jwtEncode(t, map[string]any{"alg": "none", "typ": "JWT"}, c, "")
		noneUpper := jwtEncode(t, map[string]any{"alg": "None", "typ": "JWT"}, c, "")
		otherKey := make([]byte, 32)
		rand.Read(otherKey)
		wrongKey := jwtHS256(t, h, c, otherKey)
		emptyKey := jwtHS256(t, h, c, nil)
		hs384 := jwtEncode(t, map[string]any{"alg": "HS384", "typ": "JWT"}, c, sig)
		cb := map[string]any{}
		for k, v := range c {
			cb[k] = v
		}
		cb["lid"] = b.ID
		cb["sub"] = b.Creds.AccessKeyID
		bClaimsASig := jwtEncode(t, h, cb, sig)

		A, B := a.Creds, b.Creds
		with := func(c aws.Credentials, f func(*aws.Credentials)) aws.Credentials { f(&c); return c }
		for _, tc := range []struct {
			name   string
			creds  aws.Credentials
			status int
			code   string
		}{
			{"RandomToken", with(A, func(c *aws.Credentials) { c.SessionToken = "definitely-not-a-token" }), 400, "InvalidToken"},
			{"AlgNone", with(A, func(c *aws.Credentials) { c.SessionToken = none }), 400, "InvalidToken"},
			{"AlgNoneCapitalised", with(A, func(c *aws.Credentials) { c.SessionToken = noneUpper }), 400, "InvalidToken"},
			{"AlgHS384SameSignature", with(A, func(c *aws.Credentials) { c.SessionToken = hs384 }), 400, "InvalidToken"},
			{"SignedWithAnotherKey", with(A, func(c *aws.Credentials) { c.SessionToken = wrongKey }), 400, "InvalidToken"},
			{"SignedWithEmptyKey", with(A, func(c *aws.Credentials) { c.SessionToken = emptyKey }), 400, "InvalidToken"},
			{"EditedLeaseClaim", with(A, func(c *aws.Credentials) { c.SessionToken = edit("lid", b.ID) }), 400, "InvalidToken"},
			{"EditedExpiry", with(A, func(c *aws.Credentials) { c.SessionToken = edit("exp", time.Now().Add(48*time.Hour).Unix()) }), 400, "InvalidToken"},
			{"EditedSubject", with(A, func(c *aws.Credentials) { c.SessionToken = edit("sub", b.Creds.AccessKeyID) }), 400, "InvalidToken"},
			{"EditedIssuer", with(A, func(c *aws.Credentials) { c.SessionToken = edit("iss", "someone") }), 400, "InvalidToken"},
			{"OtherLeasesClaimsThisSignature", with(B, func(c *aws.Credentials) { c.SessionToken = bClaimsASig }), 400, "InvalidToken"},
			{"OtherLeasesTokenWithThisKey", with(A, func(c *aws.Credentials) { c.SessionToken = B.SessionToken }), 400, "InvalidToken"},
			{"ThisTokenWithOtherKeyAndSecret", with(B, func(c *aws.Credentials) { c.SessionToken = A.SessionToken }), 400, "InvalidToken"},
			{"OtherKeyWithThisSecret", with(B, func(c *aws.Credentials) { c.SecretAccessKey = A.SecretAccessKey }), 403, "SignatureDoesNotMatch"},
			{"WrongSecret", with(A, func(c *aws.Credentials) { c.SecretAccessKey = otherFirst(A.SecretAccessKey) }), 403, "SignatureDoesNotMatch"},
			{"NoToken", with(A, func(c *aws.Credentials) { c.SessionToken = "" }), 400, "InvalidToken"},
			{"OwnerKeyWithLeaseToken", with(owner, func(c *aws.Credentials) { c.SessionToken = A.SessionToken }), 400, "InvalidToken"},
			{"OwnerKeyWithLeaseSecretAndToken", aws.Credentials{AccessKeyID: owner.AccessKeyID, SecretAccessKey: A.SecretAccessKey, SessionToken: A.SessionToken}, 400, "InvalidToken"},
			{"UnknownTemporaryKey", with(A, func(c *aws.Credentials) { c.AccessKeyID = "ASIA" + strings.Repeat("Z", 16) }), 400, "InvalidToken"},
			{"UnknownLongTermKey", aws.Credentials{AccessKeyID: "AKIAUNKNOWNKEY000000", SecretAccessKey: A.SecretAccessKey}, 403, "InvalidAccessKeyId"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := credsS3(t, srv, tc.creds)
				_, _, err := tryGet(c, repo, "shared/launch/a.txt")
				wantErr(t, err, tc.status, tc.code)
				_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/forged"), Body: strings.NewReader("forged")})
				wantErr(t, err, tc.status, tc.code)
				_, err = c.ListBuckets(ctx, &s3.ListBucketsInput{})
				wantErr(t, err, tc.status, tc.code)
				st, out := (&ctl{t: t, srv: srv, creds: tc.creds}).call("lease/get", map[string]any{})
				if st != http.StatusForbidden || out["error"] == nil {
					t.Fatalf("control API with %s: %d %v", tc.name, st, out)
				}
				_, err = newSTS(t, srv, staticCreds(tc.creds)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
				if err == nil {
					t.Fatalf("STS GetCallerIdentity with %s succeeded", tc.name)
				}
			})
		}
		// Nothing was written by any of them, on any branch.
		for _, li := range []*leaseInfo{a, b} {
			_, err := ownerOn(li).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/forged")})
			wantErr(t, err, http.StatusNotFound, "")
		}
		// The genuine credentials still work.
		for _, li := range []*leaseInfo{a, b} {
			got, _ := get(t, leaseS3(t, srv, li), repo, "shared/launch/a.txt")
			wantBytes(t, got, []byte("launch-a"))
		}
	})

	t.Run("PresignedTokenSwap", func(t *testing.T) {
		u, err := url.Parse(aGet)
		must(t, err)
		q := u.Query()
		if q.Get("X-Amz-Security-Token") != a.Creds.SessionToken {
			t.Fatal("presigned URL does not carry the session token")
		}
		for _, tc := range []struct {
			name, token string
			drop        bool
		}{
			{"OtherLeasesToken", b.Creds.SessionToken, false},
			{"RevokedLeasesToken", rev.Creds.SessionToken, false},
			{"Garbage", "garbage", false},
			{"Dropped", "", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				q := u.Query()
				if tc.drop {
					q.Del("X-Amz-Security-Token")
				} else {
					q.Set("X-Amz-Security-Token", tc.token)
				}
				u2 := *u
				u2.RawQuery = q.Encode()
				st, body := httpGet(t, u2.String(), nil)
				if code := xmlCode(body); st < 400 || st >= 500 || (code != "InvalidToken" && code != "SignatureDoesNotMatch") {
					t.Fatalf("presigned URL with a swapped token: %d %s", st, body)
				}
			})
		}
		// The token cannot be moved to a header either.
		q2 := u.Query()
		q2.Del("X-Amz-Security-Token")
		u2 := *u
		u2.RawQuery = q2.Encode()
		st, body := httpGet(t, u2.String(), http.Header{"X-Amz-Security-Token": {b.Creds.SessionToken}})
		if st < 400 || st >= 500 {
			t.Fatalf("presigned URL with the token in a header: %d %s", st, body)
		}
	})

	t.Run("Revoked", func(t *testing.T) {
		rc := leaseS3(t, srv, rev)
		put(t, rc, repo, "shared/launch/before-revoke", []byte("ok"))
		oc.as(t).revoke(rev.ID)
		_, _, err := tryGet(rc, repo, "shared/launch/a.txt")
		wantErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
		_, err = rc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/after-revoke"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
		_, err = rc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(repo)})
		wantErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
		st, body := httpGet(t, revGet, nil)
		if st != http.StatusForbidden || xmlCode(body) != "InvalidAccessKeyId" {
			t.Fatalf("presigned GET after revoke: %d %s", st, body)
		}
		if st, body := presignedPut(t, revPut, revPutHdr, []byte("late")); st != http.StatusForbidden {
			t.Fatalf("presigned PUT after revoke: %d %s", st, body)
		}
		leaseCtl(t, srv, rev).fails("lease/get", map[string]any{}, http.StatusForbidden, "Unauthenticated")
		leaseCtl(t, srv, rev).fails("commit/create", map[string]any{"repo": repo, "branch": rev.Branch, "message": "late"}, http.StatusForbidden, "Unauthenticated")
		_, err = newSTS(t, srv, staticCreds(rev.Creds)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err == nil {
			t.Fatal("STS accepted a revoked lease")
		}
		for _, k := range []string{"shared/launch/after-revoke", "shared/launch/late"} {
			_, err = ownerOn(rev).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String(k)})
			wantErr(t, err, http.StatusNotFound, "")
		}
		// Revoking one lease leaves the others alone.
		got, _ := get(t, leaseS3(t, srv, a), repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("launch-a"))
	})

	t.Run("Expired", func(t *testing.T) {
		ec := leaseS3(t, srv, exp)
		waitUntil(exp.ExpiresAt)
		_, _, err := tryGet(ec, repo, "shared/launch/a.txt")
		wantErr(t, err, http.StatusBadRequest, "ExpiredToken")
		_, err = ec.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/late"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusBadRequest, "ExpiredToken")
		st, body := httpGet(t, expGet, nil)
		if st != http.StatusBadRequest || xmlCode(body) != "ExpiredToken" {
			t.Fatalf("presigned GET after expiry: %d %s", st, body)
		}
		if st, body := presignedPut(t, expPut, expPutHdr, []byte("late")); st != http.StatusBadRequest || xmlCode(body) != "ExpiredToken" {
			t.Fatalf("presigned PUT after expiry: %d %s", st, body)
		}
		_, err = ownerOn(exp).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/late")})
		wantErr(t, err, http.StatusNotFound, "")
		leaseCtl(t, srv, exp).fails("lease/get", map[string]any{}, http.StatusForbidden, "Unauthenticated")
		// A forged expiry in the token does not revive it.
		h, c, sig := jwtParts(t, exp.Creds.SessionToken)
		c["exp"] = time.Now().Add(time.Hour).Unix()
		forged := exp.Creds
		forged.SessionToken = jwtEncode(t, h, c, sig)
		_, _, err = tryGet(credsS3(t, srv, forged), repo, "shared/launch/a.txt")
		wantErr(t, err, http.StatusBadRequest, "InvalidToken")
		// Its token with a live lease's key is still foreign.
		forged = a.Creds
		forged.SessionToken = exp.Creds.SessionToken
		_, _, err = tryGet(credsS3(t, srv, forged), repo, "shared/launch/a.txt")
		wantErr(t, err, http.StatusBadRequest, "InvalidToken")
	})
}

// otherFirst returns s with its first byte changed (to 'x', or 'y' when
// it already is 'x').
func otherFirst(s string) string {
	if s[0] == 'x' {
		return "y" + s[1:]
	}
	return "x" + s[1:]
}
