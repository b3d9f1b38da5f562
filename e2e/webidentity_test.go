package e2e_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"

	"github.com/agentnas/nas/nastest"
)

// STS AssumeRoleWithWebIdentity against a local OpenID Connect issuer.

// signingKey is a key of the test issuer.
type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

func rsaKey(t testing.TB, kid string) *signingKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	return &signingKey{kid: kid, alg: jose.RS256, priv: k}
}

func ecKey(t testing.TB, kid string) *signingKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	return &signingKey{kid: kid, alg: jose.ES256, priv: k}
}

func (k *signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
}

// idClaims are the claims of a test token.
type idClaims struct {
	Issuer     string   `json:"iss,omitempty"`
	Subject    string   `json:"sub,omitempty"`
	Audience   []string `json:"aud,omitempty"`
	Expiry     int64    `json:"exp,omitempty"`
	NotBefore  int64    `json:"nbf,omitempty"`
	IssuedAt   int64    `json:"iat,omitempty"`
	Repository string   `json:"repository,omitempty"`
}

// sign returns a compact JWS of c signed by k.
func (k *signingKey) sign(t testing.TB, c idClaims) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	must(t, err)
	payload, err := json.Marshal(c)
	must(t, err)
	obj, err := s.Sign(payload)
	must(t, err)
	tok, err := obj.CompactSerialize()
	must(t, err)
	return tok
}

// testIssuer is an OpenID Connect issuer: discovery and a JWKS of the
// keys it currently publishes.
type testIssuer struct {
	srv      *httptest.Server
	mu       sync.Mutex // guards keys
	keys     []*signingKey
	jwksHits atomic.Int32
}

func newIssuer(t testing.TB, keys ...*signingKey) *testIssuer {
	iss := &testIssuer{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256", "ES256", "HS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		iss.jwksHits.Add(1)
		json.NewEncoder(w).Encode(iss.jwks())
	})
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

func (i *testIssuer) jwks() jose.JSONWebKeySet {
	i.mu.Lock()
	defer i.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, k := range i.keys {
		set.Keys = append(set.Keys, k.public())
	}
	return set
}

// publish replaces the keys the issuer serves (a rotation).
func (i *testIssuer) publish(keys ...*signingKey) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = keys
}

// claims are valid claims of this issuer for sub and audience "nas".
func (i *testIssuer) claims(sub string) idClaims {
	now := time.Now()
	return idClaims{Issuer: i.srv.URL, Subject: sub, Audience: []string{"nas"}, IssuedAt: now.Unix(),
		NotBefore: now.Add(-time.Minute).Unix(), Expiry: now.Add(10 * time.Minute).Unix()}
}

func webRole(oc *ctl, name, repo string, oidc map[string]any) {
	oc.ok("role/put", map[string]any{"name": name, "repo": repo, "fork_from": "main", "max_ttl": "2h",
		"view": []map[string]any{{"path": "shared/**", "actions": []string{"list", "read", "write"}}}, "oidc": oidc})
}

func TestAssumeRoleWithWebIdentity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "webid"
	createBucket(t, own, repo)
	put(t, own, repo, "shared/a.txt", []byte("shared-a"))
	put(t, own, repo, "finance/x", []byte("finance-x"))
	oc.commit(repo, "main", "seed")

	k1 := rsaKey(t, "k1")
	iss := newIssuer(t, k1)
	webRole(oc, "etl", repo, map[string]any{"issuer": iss.srv.URL, "audience": "nas", "subject": "system:serviceaccount:etl:*"})
	anon := newSTS(t, srv, aws.AnonymousCredentials{})
	assume := func(role, session, token string) (*sts.AssumeRoleWithWebIdentityOutput, error) {
		return anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: roleArn(role),
			RoleSessionName: aws.String(session), WebIdentityToken: aws.String(token)})
	}
	refused := func(t *testing.T, code, role, token string) {
		t.Helper()
		_, err := assume(role, "refused-run", token)
		wantAPIError(t, err, code)
	}
	webCreds := func(out *sts.AssumeRoleWithWebIdentityOutput) aws.Credentials {
		c := out.Credentials
		return aws.Credentials{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey),
			SessionToken: aws.ToString(c.SessionToken), CanExpire: true, Expires: aws.ToTime(c.Expiration)}
	}
	sub := "system:serviceaccount:etl:loader"

	t.Run("Success", func(t *testing.T) {
		out, err := assume("etl", "job-1", k1.sign(t, iss.claims(sub)))
		must(t, err)
		if aws.ToString(out.SubjectFromWebIdentityToken) != sub || aws.ToString(out.Provider) != iss.srv.URL || aws.ToString(out.Audience) != "nas" {
			t.Errorf("subject %q provider %q audience %q", aws.ToString(out.SubjectFromWebIdentityToken), aws.ToString(out.Provider), aws.ToString(out.Audience))
		}
		if arn := aws.ToString(out.AssumedRoleUser.Arn); arn != "arn:aws:sts::000000000000:assumed-role/etl/job-1" {
			t.Errorf("assumed role ARN %q", arn)
		}
		li := stsLease(t, srv, webCreds(out))
		if li.Run != "job-1" || li.Branch != "etl/job-1" || li.Role != "etl" {
			t.Fatalf("lease %v", li.Raw)
		}
		wi, _ := li.Raw["web_identity"].(map[string]any)
		if wi["issuer"] != iss.srv.URL || wi["subject"] != sub {
			t.Errorf("the lease does not name its web identity: %v", li.Raw)
		}
		c := leaseS3(t, srv, li)
		got, _ := get(t, c, repo, "shared/a.txt")
		wantBytes(t, got, []byte("shared-a"))
		_, _, err = tryGet(c, repo, "finance/x")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		put(t, c, repo, "shared/job-1", []byte("work"))
		_, _, err = tryGet(own, repo, "shared/job-1")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey") // on its fork

		recs := oc.ok("record/list", map[string]any{"lease": li.ID, "kinds": []string{"lease.issued"}})["records"].([]any)
		if len(recs) != 1 {
			t.Fatalf("lease.issued records: %v", recs)
		}
		d := recs[0].(map[string]any)["details"].(map[string]any)
		if d["via"] != "sts:AssumeRoleWithWebIdentity" || d["issuer"] != iss.srv.URL || d["subject"] != sub {
			t.Errorf("the record does not name the web identity: %v", d)
		}
	})

	t.Run("SameSessionContinuesTheRun", func(t *testing.T) {
		first, err := assume("etl", "job-2", k1.sign(t, iss.claims(sub)))
		must(t, err)
		a := stsLease(t, srv, webCreds(first))
		put(t, leaseS3(t, srv, a), repo, "shared/job-2", []byte("first"))
		second, err := assume("etl", "job-2", k1.sign(t, iss.claims(sub)))
		must(t, err)
		b := stsLease(t, srv, webCreds(second))
		if a.ID == b.ID || a.Run != b.Run || a.Branch != b.Branch {
			t.Fatalf("second assume: %s %s %s, first %s %s %s", b.ID, b.Run, b.Branch, a.ID, a.Run, a.Branch)
		}
		got, _ := get(t, leaseS3(t, srv, b), repo, "shared/job-2")
		wantBytes(t, got, []byte("first"))
		// Another identity the role trusts cannot take the run over.
		_, err = assume("etl", "job-2", k1.sign(t, iss.claims("system:serviceaccount:etl:other")))
		wantAPIError(t, err, "AccessDenied")
		// Nor a run the owner started.
		_, err = newSTS(t, srv, staticCreds(owner)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("owner-run")})
		must(t, err)
		_, err = assume("etl", "owner-run", k1.sign(t, iss.claims(sub)))
		wantAPIError(t, err, "AccessDenied")
	})

	t.Run("SDKTokenFileProvider", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "token")
		must(t, os.WriteFile(path, []byte(k1.sign(t, iss.claims(sub))), 0o600))
		prov := stscreds.NewWebIdentityRoleProvider(anon, "arn:aws:iam::000000000000:role/etl", stscreds.IdentityTokenFile(path),
			func(o *stscreds.WebIdentityRoleOptions) { o.RoleSessionName = "job-sdk" })
		c := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){func(o *s3.Options) { o.Credentials = aws.NewCredentialsCache(prov) }}})
		put(t, c, repo, "shared/sdk", []byte("via the token file"))
		got, _ := get(t, c, repo, "shared/sdk")
		wantBytes(t, got, []byte("via the token file"))
	})

	t.Run("Refused", func(t *testing.T) {
		now := time.Now()
		wrongAud := iss.claims(sub)
		wrongAud.Audience = []string{"someone-else"}
		expired := iss.claims(sub)
		expired.IssuedAt, expired.NotBefore, expired.Expiry = now.Add(-time.Hour).Unix(), now.Add(-time.Hour).Unix(), now.Add(-10*time.Minute).Unix()
		early := iss.claims(sub)
		early.NotBefore = now.Add(10 * time.Minute).Unix()
		other := newIssuer(t, k1)
		foreign := other.claims(sub) // same key, another issuer
		noExp := iss.claims(sub)
		noExp.Expiry = 0

		good := k1.sign(t, iss.claims(sub))
		parts := strings.Split(good, ".")
		tamperedClaims := iss.claims("system:serviceaccount:etl:loader")
		tamperedClaims.Expiry = now.Add(24 * time.Hour).Unix()
		tb, _ := json.Marshal(tamperedClaims)
		tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(tb) + "." + parts[2]

		for _, tc := range []struct {
			name, code, role, token string
		}{
			{"WrongAudience", "InvalidIdentityToken", "etl", k1.sign(t, wrongAud)},
			{"Expired", "ExpiredTokenException", "etl", k1.sign(t, expired)},
			{"NotYetValid", "InvalidIdentityToken", "etl", k1.sign(t, early)},
			{"NoExpiry", "InvalidIdentityToken", "etl", k1.sign(t, noExp)},
			{"WrongIssuer", "AccessDenied", "etl", k1.sign(t, foreign)},
			{"AlgNone", "InvalidIdentityToken", "etl", noneToken(t, iss.claims(sub))},
			{"HS256WithThePublicKey", "InvalidIdentityToken", "etl", hmacWithPublicKey(t, k1, iss.claims(sub))},
			{"TamperedPayload", "InvalidIdentityToken", "etl", tampered},
			{"UnknownKid", "InvalidIdentityToken", "etl", rsaKey(t, "ghost").sign(t, iss.claims(sub))},
			{"KnownKidOtherKey", "InvalidIdentityToken", "etl", rsaKey(t, "k1").sign(t, iss.claims(sub))},
			{"SubjectNotMatching", "AccessDenied", "etl", k1.sign(t, iss.claims("system:serviceaccount:web:frontend"))},
			{"NoSuchRole", "AccessDenied", "nope", good},
			{"Garbage", "InvalidIdentityToken", "etl", "not.a.jwt"},
			{"JSONSerialization", "InvalidIdentityToken", "etl", `{"payload":"e30","signatures":[]}`},
		} {
			t.Run(tc.name, func(t *testing.T) { refused(t, tc.code, tc.role, tc.token) })
		}
	})

	t.Run("RoleWithoutTrust", func(t *testing.T) {
		oc.ok("role/put", map[string]any{"name": "keyed", "repo": repo, "view": []map[string]any{{"path": "shared/**", "actions": []string{"read"}}}})
		refused(t, "AccessDenied", "keyed", k1.sign(t, iss.claims(sub)))
		// A missing role, an untrusting one and an unmatched subject read
		// the same: nobody learns which roles exist or what they trust.
		var msgs []string
		for _, role := range []string{"keyed", "nope", "etl"} {
			_, err := assume(role, "probe", k1.sign(t, iss.claims("system:serviceaccount:web:x")))
			var ae smithy.APIError
			if !errors.As(err, &ae) {
				t.Fatal(err)
			}
			msgs = append(msgs, ae.ErrorMessage())
		}
		if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
			t.Errorf("refusals differ: %q", msgs)
		}
		// The record says which (never the token).
		found := false
		for _, x := range oc.ok("record/list", map[string]any{"kinds": []string{"denied"}, "limit": 1000})["records"].([]any) {
			r := x.(map[string]any)
			d, _ := r["details"].(map[string]any)
			if r["principal"] == "web-identity" && d["role"] == "etl" && strings.Contains(d["error"].(string), "does not match") {
				found = true
			}
			if b, _ := json.Marshal(r); strings.Contains(string(b), "eyJ") {
				t.Errorf("a token in the record: %s", b)
			}
		}
		if !found {
			t.Error("no record of the refused subject")
		}
	})

	t.Run("ClaimConditions", func(t *testing.T) {
		webRole(oc, "ci", repo, map[string]any{"issuer": iss.srv.URL, "audience": "nas", "subject": "repo:org/app:*",
			"claims": []map[string]any{{"claim": "repository", "pattern": "org/app"}}})
		c := iss.claims("repo:org/app:ref:refs/heads/main")
		refused(t, "AccessDenied", "ci", k1.sign(t, c)) // no repository claim
		c.Repository = "org/other"
		refused(t, "AccessDenied", "ci", k1.sign(t, c))
		c.Repository = "org/app"
		_, err := assume("ci", "gha-1", k1.sign(t, c))
		must(t, err)
	})

	t.Run("Parameters", func(t *testing.T) {
		tok := k1.sign(t, iss.claims(sub))
		_, err := anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("p-1"), WebIdentityToken: aws.String(tok), DurationSeconds: aws.Int32(60)})
		wantAPIError(t, err, "ValidationError")
		_, err = anon.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{RoleArn: roleArn("etl"), RoleSessionName: aws.String("p-1"), WebIdentityToken: aws.String(tok), DurationSeconds: aws.Int32(4 * 3600)})
		wantAPIError(t, err, "ValidationError") // beyond the role's 2h
		st, _, body := rawPost(t, srv.Endpoint, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=arn:aws:iam::000000000000:role/etl&RoleSessionName=p-2")
		if st != http.StatusBadRequest || xmlCode(body) != "MissingParameter" {
			t.Errorf("no token: %d %s", st, body)
		}
		resp, err := http.Get(srv.Endpoint + "/?Action=AssumeRoleWithWebIdentity&RoleArn=arn:aws:iam::000000000000:role/etl&RoleSessionName=p-3&WebIdentityToken=" + tok)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a token in the URL: %d", resp.StatusCode)
		}
	})

	t.Run("IssuerDown", func(t *testing.T) {
		down := newIssuer(t, k1)
		claims := down.claims(sub)
		webRole(oc, "down", repo, map[string]any{"issuer": down.srv.URL, "audience": "nas", "subject": "system:serviceaccount:*"})
		down.srv.Close()
		refused(t, "IDPCommunicationError", "down", k1.sign(t, claims))
	})

	t.Run("KeyRotation", func(t *testing.T) {
		r1, r2 := rsaKey(t, "r1"), ecKey(t, "r2")
		rot := newIssuer(t, r1)
		webRole(oc, "rot", repo, map[string]any{"issuer": rot.srv.URL, "audience": "nas", "subject": "system:serviceaccount:*"})
		_, err := assume("rot", "rot-1", r1.sign(t, rot.claims(sub)))
		must(t, err)
		rot.publish(r2) // the issuer switches keys
		_, err = assume("rot", "rot-2", r2.sign(t, rot.claims(sub)))
		must(t, err) // the unknown kid made the gateway fetch the set again
		_, err = assume("rot", "rot-3", r1.sign(t, rot.claims(sub)))
		wantAPIError(t, err, "InvalidIdentityToken") // the old key is gone
		_, err = assume("rot", "rot-4", r2.sign(t, rot.claims(sub)))
		must(t, err)
	})

	t.Run("UnknownKidFloodIsRationed", func(t *testing.T) {
		nastest.SkipInCluster(t, "each gateway rations its own key set fetches")
		fk := rsaKey(t, "f1")
		flood := newIssuer(t, fk)
		webRole(oc, "flood", repo, map[string]any{"issuer": flood.srv.URL, "audience": "nas", "subject": "system:serviceaccount:*"})
		var idp int
		for i := range 12 {
			_, err := assume("flood", "flood-1", rsaKey(t, "ghost-"+string(rune('a'+i))).sign(t, flood.claims(sub)))
			if errCode(err) == "IDPCommunicationError" {
				idp++
			}
		}
		if hits := flood.jwksHits.Load(); hits > 6 || idp == 0 {
			t.Errorf("12 unknown kids: %d key set fetches, %d IDPCommunicationError", hits, idp)
		}
		_, err := assume("flood", "flood-2", fk.sign(t, flood.claims(sub)))
		must(t, err) // the cached key still verifies
	})

	t.Run("StaticJWKS", func(t *testing.T) {
		sk := ecKey(t, "static-1")
		set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{sk.public()}})
		const issuer = "https://kubernetes.default.svc.cluster.local"
		webRole(oc, "k8s", repo, map[string]any{"issuer": issuer, "audience": "nas", "jwks": json.RawMessage(set), "subject": "system:serviceaccount:*"})
		c := iss.claims(sub)
		c.Issuer = issuer
		out, err := assume("k8s", "pod-1", sk.sign(t, c))
		must(t, err)
		got, _ := get(t, leaseS3(t, srv, stsLease(t, srv, webCreds(out))), repo, "shared/a.txt")
		wantBytes(t, got, []byte("shared-a"))
		refused(t, "InvalidIdentityToken", "k8s", k1.sign(t, c)) // a key not in the file
		// A trust that names nobody (any subject of the issuer) is refused.
		oc.fails("role/put", map[string]any{"name": "anyone", "repo": repo, "view": []map[string]any{{"path": "**", "actions": []string{"read"}}},
			"oidc": map[string]any{"issuer": "https://token.actions.githubusercontent.com", "audience": "sts.amazonaws.com"}}, http.StatusBadRequest, "InvalidArgument")
		priv, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: sk.priv, KeyID: "p", Algorithm: "ES256"}}})
		oc.fails("role/put", map[string]any{"name": "k8s-priv", "repo": repo, "view": []map[string]any{{"path": "**", "actions": []string{"read"}}},
			"oidc": map[string]any{"issuer": issuer, "audience": "nas", "subject": "system:serviceaccount:*", "jwks": json.RawMessage(priv)}}, http.StatusBadRequest, "InvalidArgument")
	})
}

// noneToken is an unsigned token ("alg": "none").
func noneToken(t testing.TB, c idClaims) string {
	b, err := json.Marshal(c)
	must(t, err)
	return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + base64.RawURLEncoding.EncodeToString(b) + "."
}

// hmacWithPublicKey is the classic confusion attack: HS256 keyed with the
// issuer's public key as published.
func hmacWithPublicKey(t testing.TB, k *signingKey, c idClaims) string {
	der, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	must(t, err)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": c.Issuer, "sub": c.Subject, "aud": c.Audience, "exp": c.Expiry, "iat": c.IssuedAt})
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(pemKey)
	must(t, err)
	return s
}

// rawPost POSTs an unsigned STS form.
func rawPost(t testing.TB, endpoint, form string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint+"/", strings.NewReader(form))
	must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(t, req)
}
