// Package keyring keeps the domain keys of sealed (sensitive) content, one
// small file a key, outside the metadata store: a key in Badger would
// live on in its log and tables after deletion, while a file can be
// overwritten, synced and unlinked, which is what destroying a key means.
//
// A domain has at most one live key, which seals new content; a
// destroyed key leaves a tombstone, so reading content it sealed answers
// ErrDestroyed instead of a vague failure. The files are
// DIR/DOMAIN@ID.key (32 random bytes, mode 0600) and DIR/DOMAIN@ID.destroyed.
package keyring

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// KeySize is the size of a domain key.
const KeySize = 32

// Errors of the keyring.
var (
	ErrInvalid   = errors.New("invalid key domain")
	ErrDestroyed = errors.New("the key was destroyed")
	ErrNoKey     = errors.New("no such key")
)

// domainRE is what a domain may be named: short, lower case, no path.
var domainRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidDomain checks a domain's name.
func ValidDomain(d string) error {
	if !domainRE.MatchString(d) {
		return fmt.Errorf("%w: %q (want 1-63 of a-z, 0-9, ., _ and -, starting with a letter or digit)", ErrInvalid, d)
	}
	return nil
}

// Ring is the keys in one directory.
type Ring struct {
	dir   string
	mu    sync.Mutex
	cache map[string][]byte // "domain.id" -> key
}

// Open opens (creating) the keyring in dir.
func Open(dir string) (*Ring, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return &Ring{dir: dir, cache: map[string][]byte{}}, nil
}

func (r *Ring) path(domain, id, ext string) string {
	return filepath.Join(r.dir, domain+"@"+id+ext)
}

// Current returns the ID and key that seal new content of domain,
// creating the domain's key when it has no live one.
func (r *Ring) Current(domain string) (string, []byte, error) {
	if err := ValidDomain(domain); err != nil {
		return "", nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, err := r.ids(domain, ".key")
	if err != nil {
		return "", nil, err
	}
	if len(ids) > 0 {
		k, err := r.load(domain, ids[len(ids)-1])
		return ids[len(ids)-1], k, err
	}
	return r.create(domain)
}

// create writes a new key for domain (r.mu held).
func (r *Ring) create(domain string) (string, []byte, error) {
	var b [8]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	key := make([]byte, KeySize)
	rand.Read(key)
	p := r.path(domain, id, ".key")
	tmp := p + ".tmp"
	if err := writeSynced(tmp, key); err != nil {
		return "", nil, err
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", nil, fmt.Errorf("keyring: %w", err)
	}
	if err := syncDir(r.dir); err != nil {
		return "", nil, err
	}
	r.cache[domain+"."+id] = key
	return id, key, nil
}

// Key returns domain's key id: ErrDestroyed when it was destroyed,
// ErrNoKey when the keyring never held it.
func (r *Ring) Key(domain, id string) ([]byte, error) {
	if err := ValidDomain(domain); err != nil {
		return nil, err
	}
	if _, err := hex.DecodeString(id); err != nil || len(id) != 16 {
		return nil, fmt.Errorf("%w: key id %q", ErrNoKey, id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.load(domain, id)
}

// load reads a key (r.mu held).
func (r *Ring) load(domain, id string) ([]byte, error) {
	if k, ok := r.cache[domain+"."+id]; ok {
		if _, err := os.Stat(r.path(domain, id, ".key")); err == nil {
			return k, nil // still live: another process may destroy it
		}
		delete(r.cache, domain+"."+id)
	}
	k, err := os.ReadFile(r.path(domain, id, ".key"))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(r.path(domain, id, ".destroyed")); serr == nil {
			return nil, fmt.Errorf("key %s/%s: %w", domain, id, ErrDestroyed)
		}
		return nil, fmt.Errorf("key %s/%s: %w", domain, id, ErrNoKey)
	}
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	if len(k) != KeySize {
		return nil, fmt.Errorf("keyring: %s/%s holds %d bytes, want %d", domain, id, len(k), KeySize)
	}
	r.cache[domain+"."+id] = k
	return k, nil
}

// ids lists domain's key IDs with files ending in ext, in name order
// (r.mu held).
func (r *Ring) ids(domain, ext string) ([]string, error) {
	ms, err := filepath.Glob(filepath.Join(r.dir, domain+"@*"+ext))
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, m := range ms {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), domain+"@"), ext)
		if len(id) == 16 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Destroy destroys every live key of domain: each file is overwritten
// with zeros and synced, a tombstone is written, the file is unlinked and
// the directory synced. It returns the destroyed keys as "domain/id".
func (r *Ring) Destroy(domain string) ([]string, error) {
	if err := ValidDomain(domain); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ids, err := r.ids(domain, ".key")
	if err != nil {
		return nil, err
	}
	var done []string
	for _, id := range ids {
		if err := r.destroy(domain, id); err != nil {
			return done, err
		}
		done = append(done, domain+"/"+id)
	}
	return done, syncDir(r.dir)
}

// destroy shreds one key file (r.mu held).
func (r *Ring) destroy(domain, id string) error {
	delete(r.cache, domain+"."+id)
	p := r.path(domain, id, ".key")
	if err := writeSynced(p, make([]byte, KeySize)); err != nil {
		return err
	}
	if err := writeSynced(r.path(domain, id, ".destroyed"), nil); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return nil
}

// writeSynced writes b to p (0600) and syncs it.
func writeSynced(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("keyring: %w", err)
	}
	return nil
}
