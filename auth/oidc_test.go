package auth

import (
	"crypto/ecdsa"
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
