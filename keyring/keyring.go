// Package keyring keeps the domain keys of sealed (sensitive) content, one
// small file a key, outside the metadata store: a key in Badger would
// live on in its log and tables after deletion, while a file can be
// overwritten, synced and unlinked, which is what destroying a key means.
//
// A domain has at most one live key, which seals new content; a
// destroyed key leaves a tombstone, so reading content it sealed answers
// ErrDestroyed instead of a vague failure.
//
// A domain belongs to one repository: the ring names it REPO/DOMAIN
// (Scoped), so a forget in one repository can never destroy the keys of
// another's, whatever domain names its writers chose. The files are
// DIR/REPO/DOMAIN@ID.key (32 random bytes, mode 0600) and
// DIR/REPO/DOMAIN@ID.destroyed. A name without a repository (content
// sealed before domains were scoped) is DIR/DOMAIN@ID.key.
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

// Scoped is the ring's name of repo's domain.
func Scoped(repo, domain string) string { return repo + "/" + domain }

// Unscoped is the domain part of a ring's name (the name itself when it
// has no repository).
func Unscoped(name string) string {
	_, d, ok := strings.Cut(name, "/")
	if !ok {
		return name
	}
	return d
}

// validName checks a ring's name: a domain, or REPO/DOMAIN.
func validName(name string) error {
	repo, d, ok := strings.Cut(name, "/")
	if !ok {
		return ValidDomain(name)
	}
	if !domainRE.MatchString(repo) {
		return fmt.Errorf("%w: repository %q", ErrInvalid, repo)
	}
	return ValidDomain(d)
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

func (r *Ring) path(name, id, ext string) string {
	return filepath.Join(r.dir, name+"@"+id+ext)
}

// dirOf is the directory holding name's files.
func (r *Ring) dirOf(name string) string {
	return filepath.Dir(r.path(name, "", ""))
}

// Current returns the ID and key that seal new content of the domain
// named (Scoped), creating the domain's key when it has no live one.
func (r *Ring) Current(domain string) (string, []byte, error) {
	if err := validName(domain); err != nil {
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
	if dir := r.dirOf(domain); dir != r.dir {
		if err := os.Mkdir(dir, 0o700); err == nil {
			if err := syncDir(r.dir); err != nil {
				return "", nil, err
			}
		} else if !errors.Is(err, os.ErrExist) {
			return "", nil, fmt.Errorf("keyring: %w", err)
		}
	}
	p := r.path(domain, id, ".key")
	tmp := p + ".tmp"
	if err := writeSynced(tmp, key); err != nil {
		return "", nil, err
	}
	if err := os.Rename(tmp, p); err != nil {
		return "", nil, fmt.Errorf("keyring: %w", err)
	}
	if err := syncDir(r.dirOf(domain)); err != nil {
		return "", nil, err
	}
	r.cache[domain+"."+id] = key
	return id, key, nil
}

// Key returns domain's key id: ErrDestroyed when it was destroyed,
// ErrNoKey when the keyring never held it.
func (r *Ring) Key(domain, id string) ([]byte, error) {
	if err := validName(domain); err != nil {
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
	ms, err := filepath.Glob(r.path(domain, "*", ext))
	if err != nil {
		return nil, err
	}
	base := filepath.Base(r.path(domain, "", ""))
	var ids []string
	for _, m := range ms {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), base), ext)
		if len(id) == 16 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Destroy destroys every live key of the domain named: each file is overwritten
// with zeros and synced, a tombstone is written, the file is unlinked and
// the directory synced. It returns the destroyed keys as "domain/id".
func (r *Ring) Destroy(domain string) ([]string, error) {
	if err := validName(domain); err != nil {
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
	if len(ids) == 0 {
		return nil, nil
	}
	return done, syncDir(r.dirOf(domain))
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
