package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentnas/nas/lease"
)

// TestParseJWKS: a role keeps public signature keys only.
func TestParseJWKS(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	set := func(keys ...jose.JSONWebKey) []byte {
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for name, tc := range map[string]struct {
		raw []byte
		ok  bool
	}{
		"ec public":  {set(jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "a", Algorithm: "ES256", Use: "sig"}), true},
		"ec private": {set(jose.JSONWebKey{Key: ec, KeyID: "a", Algorithm: "ES256"}), false},
		"symmetric":  {set(jose.JSONWebKey{Key: []byte("0123456789abcdef0123456789abcdef"), KeyID: "h", Algorithm: "HS256"}), false},
		"small rsa":  {set(jose.JSONWebKey{Key: &small.PublicKey, KeyID: "r", Algorithm: "RS256"}), false},
		"encryption": {set(jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "e", Use: "enc"}), false},
		"empty":      {[]byte(`{"keys":[]}`), false},
		"not json":   {[]byte(`{"keys":`), false},
		"too large":  {[]byte(`{"keys":[],"x":"` + strings.Repeat("x", lease.MaxJWKS) + `"}`), false},
	} {
		pubs, canon, err := ParseJWKS(tc.raw)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if err != nil && !errors.Is(err, lease.ErrInvalid) {
			t.Errorf("%s: %v does not wrap lease.ErrInvalid", name, err)
		}
		if err == nil && (len(pubs) != 1 || strings.Contains(string(canon), `"d"`)) {
			t.Errorf("%s: %d keys, %s", name, len(pubs), canon)
		}
	}
}

// FuzzParseJWKS: a key set of hostile bytes never panics the parser, and
// what it accepts holds public keys only and reads back the same.
func FuzzParseJWKS(f *testing.F) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for _, k := range []jose.JSONWebKey{{Key: &ec.PublicKey, KeyID: "a", Algorithm: "ES256"}, {Key: ec, KeyID: "p"}} {
		b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{k}})
		f.Add(b)
	}
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		pubs, canon, err := ParseJWKS(raw)
		if err != nil {
			return
		}
		for _, p := range pubs {
			switch p.(type) {
			case *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey:
			default:
				t.Fatalf("accepted a %T", p)
			}
		}
		again, canon2, err := ParseJWKS(canon)
		if err != nil || len(again) != len(pubs) || string(canon2) != string(canon) {
			t.Fatalf("the canonical set does not read back: %v", err)
		}
	})
}

// FuzzParseWebToken: a hostile token never panics the form check, and
// what passes it is a compact JWS of an allowed algorithm.
func FuzzParseWebToken(f *testing.F) {
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := parseWebToken(token)
		if err != nil {
			if !errors.Is(err, ErrInvalidIdentityToken) {
				t.Fatalf("refused without ErrInvalidIdentityToken: %v", err)
			}
			return
		}
		if c == nil || strings.Count(token, ".") != 2 || len(token) > MaxWebIdentityToken {
			t.Fatalf("accepted %q", token)
		}
	})
}
