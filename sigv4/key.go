package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"sync"
)

// SigningKey derives the SigV4 signing key for a secret, a scope date
// (YYYYMMDD), a region and a service:
// HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request").
func SigningKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, scopeTerminator)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// keyCacheSize bounds the derived keys a Verifier keeps: about 200 bytes
// per entry (four strings and a 32-byte key), so a few hundred KiB at most.
const keyCacheSize = 1024

// keyID names a derived signing key.
type keyID struct{ secret, date, region, service string }

// keyCache memoises SigningKey; a key changes only daily per credential,
// while deriving it costs four HMACs on every request. The zero value is
// ready to use.
type keyCache struct {
	mu sync.Mutex // guards m
	m  map[keyID][]byte
}

// get returns the signing key, deriving and remembering it on a miss. When
// full, an arbitrary entry is dropped. The returned slice must not be
// modified.
func (c *keyCache) get(secret, date, region, service string) []byte {
	id := keyID{secret, date, region, service}
	c.mu.Lock()
	k, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return k
	}
	k = SigningKey(secret, date, region, service)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[keyID][]byte)
	}
	if len(c.m) >= keyCacheSize {
		for old := range c.m {
			delete(c.m, old)
			break
		}
	}
	c.m[id] = k
	c.mu.Unlock()
	return k
}
