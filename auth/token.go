package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
)

// Credentials are the STS-style temporary credentials of a lease.
type Credentials struct {
	AccessKeyID     string    `json:"access_key_id"`
	SecretAccessKey string    `json:"secret_access_key"`
	SessionToken    string    `json:"session_token"`
	Expiration      time.Time `json:"expires_at"`
}

// keys are the gateway's secrets for leases: one signs session tokens, the
// other derives temporary secrets from access keys. Both are 32 random
// bytes generated on first use and kept in kv.
type keys struct {
	Token  []byte `json:"token"`
	Secret []byte `json:"secret"`
}

var keysKey = []byte(keyspace.TokenKeys + "lease")

func loadKeys(ctx context.Context, db kv.DB) (*keys, error) {
	var k keys
	err := db.Update(ctx, func(txn kv.Txn) error {
		b, err := txn.Get(keysKey)
		if err == nil {
			return json.Unmarshal(b, &k)
		}
		if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		k = keys{Token: make([]byte, 32), Secret: make([]byte, 32)}
		rand.Read(k.Token)
		rand.Read(k.Secret)
		b, _ = json.Marshal(k)
		return txn.Set(keysKey, b)
	})
	if err != nil {
		return nil, fmt.Errorf("lease keys: %w", err)
	}
	return &k, nil
}

// newAccessKeyID returns an access key in AWS's temporary-key form.
func newAccessKeyID() string {
	b := make([]byte, 10)
	rand.Read(b)
	return "ASIA" + base32.StdEncoding.EncodeToString(b)
}

// secretFor derives the temporary secret of an access key; it is never
// stored and never leaves the gateway except in the issuing response.
func (k *keys) secretFor(accessKey string) string {
	m := hmac.New(sha256.New, k.Secret)
	m.Write([]byte(accessKey))
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))[:40]
}

// claims are the session token's claims: which lease and key it belongs
// to. No secret is in it: presigned URLs carry the token in the clear.
type claims struct {
	Lease string `json:"lid"`
	jwt.RegisteredClaims
}

const issuer = "agentnas"

// token signs the session token of a lease, or of an owner session: id
// is the lease's "lse_…" or the session's "ses_…" ID.
func (k *keys) token(id, accessKey string, issued, expires time.Time) (string, error) {
	c := claims{Lease: id, RegisteredClaims: jwt.RegisteredClaims{
		Issuer:    issuer,
		Subject:   accessKey,
		IssuedAt:  jwt.NewNumericDate(issued),
		ExpiresAt: jwt.NewNumericDate(expires),
	}}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(k.Token)
}

// parse verifies a session token for accessKey and returns the lease (or
// owner session) ID.
// Only HS256 with the gateway's key is accepted ("alg: none" and every
// other algorithm are refused); the expiry is checked by the caller
// against the lease's live state, so an expired token reports lease.ErrExpired.
func (k *keys) parse(accessKey, token string) (string, error) {
	var c claims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return k.Token, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer),
		jwt.WithSubject(accessKey),
		jwt.WithoutClaimsValidation(),
	)
	if err != nil {
		return "", fmt.Errorf("%w: %v", lease.ErrBadToken, err)
	}
	if c.Issuer != issuer || c.Subject != accessKey || c.Lease == "" {
		return "", lease.ErrBadToken
	}
	return c.Lease, nil
}
