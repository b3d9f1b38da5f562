// Command nas-adapter-postgres is a source adapter (package adapter) that
// shows PostgreSQL tables and named queries as files (CSV or JSON Lines),
// each pinned by the SHA-256 of its rendered bytes. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentnas/nas/adapter"
)

// repeated is a repeated string flag.
type repeated []string

func (l *repeated) String() string     { return strings.Join(*l, ",") }
func (l *repeated) Set(s string) error { *l = append(*l, s); return nil }

// options are the flags.
type options struct {
	dsn      string
	tables   repeated
	queries  repeated
	format   string
	cache    string
	cacheMax int64
	timeout  time.Duration
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(os.Args[1:], os.Stdin, os.Stdout, log); err != nil {
		log.Error("nas-adapter-postgres", "err", err)
		os.Exit(1)
	}
}

// run parses args and serves the protocol on in and out.
func run(args []string, in io.Reader, out io.Writer, log *slog.Logger) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if hasPassword(o.dsn) {
		log.Warn("the DSN holds a password, visible to anyone who can list processes: use a passfile (~/.pgpass, PGPASSFILE) or peer authentication")
	}
	s, err := newServer(o, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return adapter.Serve(ctx, in, out, s)
}

func parseFlags(args []string) (options, error) {
	o := options{format: "csv", cache: filepath.Join(os.TempDir(), "nas-adapter-postgres-"+strconv.Itoa(os.Getuid()))}
	fs := flag.NewFlagSet("nas-adapter-postgres", flag.ContinueOnError)
	fs.StringVar(&o.dsn, "dsn", "", "the database to connect to (URL or key=value; no password in it: use a passfile or peer authentication)")
	fs.Var(&o.tables, "table", "a table (or view) to show, as NAME or SCHEMA.NAME (repeat for more)")
	fs.Var(&o.queries, "query", "a query to show, as NAME=SQL (repeat for more)")
	fs.StringVar(&o.format, "format", o.format, "how objects are rendered: csv (with a header row) or jsonl")
	fs.StringVar(&o.cache, "cache", o.cache, "directory of rendered objects, named by their SHA-256")
	fs.Int64Var(&o.cacheMax, "cache-max", 1<<30, "bytes the cache may hold; the least recently used files beyond it are removed")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "bound on connecting to the database")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.dsn == "":
		return o, errors.New("--dsn is required")
	case len(o.tables)+len(o.queries) == 0:
		return o, errors.New("give at least one --table or --query")
	case o.format != "csv" && o.format != "jsonl":
		return o, fmt.Errorf("--format %q: csv or jsonl", o.format)
	case o.cache == "":
		return o, errors.New("--cache must not be empty")
	case o.cacheMax < 0 || o.timeout <= 0:
		return o, errors.New("--cache-max must not be negative, --timeout must be positive")
	}
	return o, nil
}

// hasPassword reports whether dsn (URL or key=value) holds a password.
func hasPassword(dsn string) bool {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		_, ok := u.User.Password()
		return ok || u.Query().Has("password")
	}
	for f := range strings.FieldsSeq(dsn) {
		if k, _, ok := strings.Cut(f, "="); ok && strings.TrimSpace(k) == "password" {
			return true
		}
	}
	return false
}
