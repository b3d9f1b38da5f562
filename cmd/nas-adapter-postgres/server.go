package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentnas/nas/adapter"
)

// server shows tables and queries as objects.
type server struct {
	cfg    *pgx.ConnConfig
	defs   []def
	format string
	cache  *cache
	log    *slog.Logger

	listing adapter.Listing // of the last list from the start, for its next pages
}

func newServer(o options, log *slog.Logger) (*server, error) {
	ds, err := defs(o.tables, o.queries, o.format)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(o.dsn)
	if err != nil {
		return nil, fmt.Errorf("--dsn: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = o.timeout
	}
	c, err := openCache(o.cache, o.cacheMax, log)
	if err != nil {
		return nil, err
	}
	return &server{cfg: cfg, defs: ds, format: o.format, cache: c, log: log}, nil
}

// Name implements adapter.Server.
func (s *server) Name() string { return "postgres" }

// List implements adapter.Server: a list from the start renders every
// object in one snapshot; the pages after it are answered from that
// listing.
func (s *server) List(ctx context.Context, after string, limit int) ([]adapter.Object, bool, error) {
	return s.listing.List(ctx, after, limit, func(ctx context.Context) ([]adapter.Object, error) { return s.render(ctx, s.defs) })
}

// Stat implements adapter.Server: the object rendered afresh.
func (s *server) Stat(ctx context.Context, key string) (adapter.Object, error) {
	d, ok := s.def(key)
	if !ok {
		return adapter.Object{}, notFound(key)
	}
	objs, err := s.render(ctx, []def{d})
	if err != nil {
		return adapter.Object{}, err
	}
	if len(objs) == 0 {
		return adapter.Object{}, notFound(key)
	}
	return objs[0], nil
}

// Read implements adapter.Server: from the cached rendering named
// version, else from a rendering now, which must hash to version.
func (s *server) Read(ctx context.Context, key, version string, off, n int64) (io.ReadCloser, int64, error) {
	d, ok := s.def(key)
	if !ok {
		return nil, 0, changed("no object %q any more", key)
	}
	if !isHash(version) {
		return nil, 0, changed("%q is not a version of this adapter", version)
	}
	f, err := s.cache.open(version)
	if errors.Is(err, os.ErrNotExist) {
		var objs []adapter.Object
		if objs, err = s.render(ctx, []def{d}); err != nil {
			return nil, 0, err
		}
		if len(objs) == 0 || objs[0].Version != version {
			return nil, 0, changed("%s is no longer version %s", key, version)
		}
		f, err = s.cache.open(version)
	}
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("read %s: %w", key, err)
	}
	length := max(0, min(n, fi.Size()-off))
	return readCloser{io.NewSectionReader(f, off, length), f}, length, nil
}

func (s *server) def(key string) (def, bool) {
	i, ok := slices.BinarySearchFunc(s.defs, key, func(d def, k string) int { return strings.Compare(d.key, k) })
	if !ok {
		return def{}, false
	}
	return s.defs[i], true
}

// readCloser reads from one and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

func notFound(key string) error {
	return &adapter.Error{Code: adapter.CodeNotFound, Message: fmt.Sprintf("no object %q", key)}
}

func changed(format string, args ...any) error {
	return &adapter.Error{Code: adapter.CodeChanged, Message: fmt.Sprintf(format, args...)}
}
