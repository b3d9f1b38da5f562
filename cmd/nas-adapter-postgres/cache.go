package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentnas/nas/adapter"
)

// cache is a directory of rendered objects, each named by the hex
// SHA-256 of its bytes. Several adapters may share it: files are written
// under a temporary name and renamed, and a file removed while being
// read stays readable.
type cache struct {
	dir string
	max int64
	log *slog.Logger
}

// openCache makes dir (0700) or checks that it is a directory of ours
// that no one else may write to.
func openCache(dir string, max int64, log *slog.Logger) (*cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || (ok && int(st.Uid) != os.Geteuid()) {
		return nil, fmt.Errorf("cache %s: not a directory of ours that only we may write to", dir)
	}
	return &cache{dir: dir, max: max, log: log}, nil
}

// isHash reports whether v is a hex SHA-256 (and so a file name of the
// cache, never a path).
func isHash(v string) bool {
	if len(v) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(v)
	return err == nil && strings.ToLower(v) == v
}

// write writes what fill writes into the cache and returns its size,
// version and SHA-256 (the version).
func (c *cache) write(fill func(io.Writer) error) (adapter.Object, error) {
	f, err := os.CreateTemp(c.dir, "tmp-")
	if err != nil {
		return adapter.Object{}, fmt.Errorf("cache: %w", err)
	}
	defer os.Remove(f.Name())
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	err = fill(cw)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && cw.n > adapter.MaxSize {
		err = fmt.Errorf("%d bytes, more than an object may hold", cw.n)
	}
	if err != nil {
		return adapter.Object{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := os.Rename(f.Name(), filepath.Join(c.dir, sum)); err != nil {
		return adapter.Object{}, fmt.Errorf("cache: %w", err)
	}
	return adapter.Object{Size: cw.n, Version: sum, SHA256: sum}, nil
}

// open opens the rendering named version and marks it used.
func (c *cache) open(version string) (*os.File, error) {
	p := filepath.Join(c.dir, version)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	os.Chtimes(p, now, now)
	return f, nil
}

// trim removes the least recently used renderings beyond c.max bytes,
// but not keep (those just rendered), and temporary files of writers
// that died more than an hour ago.
func (c *cache) trim(keep []string) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		c.log.Warn("cache not trimmed", "err", err)
		return
	}
	type file struct {
		name string
		size int64
		used time.Time
	}
	var files []file
	var total int64
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(e.Name(), "tmp-") && time.Since(fi.ModTime()) > time.Hour {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
		if !isHash(e.Name()) {
			continue
		}
		total += fi.Size()
		if !slices.Contains(keep, e.Name()) {
			files = append(files, file{e.Name(), fi.Size(), fi.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return a.used.Compare(b.used) })
	for _, f := range files {
		if total <= c.max {
			break
		}
		if err := os.Remove(filepath.Join(c.dir, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			c.log.Warn("cache file not removed", "err", err)
			continue
		}
		total -= f.size
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
