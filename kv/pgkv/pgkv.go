// Package pgkv is the PostgreSQL engine of kv.DB, so that several
// stateless gateways can share one database.
//
// Everything lives in one table, kv (k bytea PRIMARY KEY, v bytea NOT
// NULL), in a schema of its own (default "nas"). bytea compares bytewise,
// which is the order kv.Range needs, whatever the database's collation.
//
// The contract is Badger's (kvtest.TestDB checks both), in these terms:
//
//   - View runs in a REPEATABLE READ READ ONLY transaction: one snapshot,
//     taken at its first read. (PostgreSQL's read-only anomaly applies: a
//     View may see a state no serial order of the Updates produces; Updates
//     themselves are serializable.)
//   - Update runs in a SERIALIZABLE transaction. Serialization failures
//     (SQLSTATE 40001) and deadlocks (40P01) are retried with jittered
//     backoff, at least kv.MinRetries times and for at least kv.RetryFor, then
//     Update returns kv.ErrConflict. Range scans take predicate locks, so
//     unlike Badger an insert into a range another transaction scanned is a
//     conflict.
//   - Durability: an Update or Flush that returned nil is committed with
//     the server's synchronous_commit, which must be on (the default; Open
//     logs a warning otherwise, and when fsync is off).
//   - Keys are at most MaxKeySize (2 KiB) long, else ErrKeyTooLong.
//   - A Txn's Sets and Deletes are queued and sent together in one round
//     trip before its next Get or Scan (which therefore see them) and
//     before its commit; a server error of a write surfaces there (and
//     from Update). A Txn holding more than Options.MaxTxnBytes of writes
//     fails with kv.ErrTooBig.
//   - Scan reads pages (keyset pagination, at most 512 rows and about 8 MiB
//     a page), so a huge range never sits in memory; the callback may use
//     the transaction (Get, Set) while a Scan runs.
//   - Errors of an unreachable server wrap kv.ErrUnavailable; connecting is
//     bounded by Options.ConnectTimeout. Update does not retry them: one
//     lost during the commit leaves its outcome unknown to the caller.
//   - Batch collapses its writes to the last one per key and flushes them
//     in transactions of at most 1,000 keys or 16 MiB: durable, not atomic
//     as a group.
//
// Open creates and migrates the schema itself (see migrate.go), so
// gateways starting at once against a new database migrate it once.
package pgkv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of Options.
const (
	DefaultSchema         = "nas"
	DefaultMaxConns       = 16
	DefaultConnectTimeout = 5 * time.Second
	DefaultMaxTxnBytes    = 64 << 20
)

// MaxKeySize is the longest key Set takes. A btree index entry holds at
// most 2,704 bytes (PostgreSQL 15, 8 KiB pages), less for keys that do not
// compress, so keys stop well short of it (Badger takes 65,000 bytes).
const MaxKeySize = 2048

// ErrKeyTooLong is returned by Set for a key longer than MaxKeySize.
var ErrKeyTooLong = errors.New("pgkv: key too long")

// Options tunes the engine; the zero value is the default.
type Options struct {
	// Schema holds the engine's tables (default "nas"); created if missing.
	// It must be a plain lower-case SQL identifier.
	Schema string
	// MaxConns is the size of the connection pool (default 16). A View or
	// Update holds one connection for its whole run.
	MaxConns int32
	// ConnectTimeout bounds each connection attempt (default 5 s) unless the
	// DSN sets connect_timeout.
	ConnectTimeout time.Duration
	// MaxTxnBytes bounds the keys and values one Update may write (default
	// 64 MiB); beyond it Set and Delete fail with kv.ErrTooBig.
	MaxTxnBytes int64
	// Logger receives warnings (nil discards them).
	Logger *slog.Logger
}

// DB is a kv.DB on PostgreSQL.
type DB struct {
	pool   *pgxpool.Pool
	log    *slog.Logger
	q      queries
	maxTxn int64
}

var _ kv.DB = (*DB)(nil)

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to the database at dsn, migrates the engine's schema and
// returns the DB. It fails if the schema is newer than this code knows.
func Open(ctx context.Context, dsn string, o Options) (*DB, error) {
	o = o.withDefaults()
	if !identifier.MatchString(o.Schema) {
		return nil, fmt.Errorf("pgkv: schema %q is not a plain lower-case identifier", o.Schema)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgkv: parse dsn: %w", err)
	}
	cfg.MaxConns = o.MaxConns
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgkv: %w", classify(err))
	}
	db := &DB{pool: pool, log: o.Logger, q: newQueries(o.Schema), maxTxn: o.MaxTxnBytes}
	if err := db.migrate(ctx, o.Schema); err != nil {
		pool.Close()
		return nil, err
	}
	if err := db.checkDurability(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

func (o Options) withDefaults() Options {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxTxnBytes <= 0 {
		o.MaxTxnBytes = DefaultMaxTxnBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// checkDurability warns when the server's settings void the promise that a
// committed Update survives a crash.
func (db *DB) checkDurability(ctx context.Context) error {
	for _, setting := range []string{"synchronous_commit", "fsync"} {
		var v string
		if err := db.pool.QueryRow(ctx, "SHOW "+setting).Scan(&v); err != nil {
			return fmt.Errorf("pgkv: show %s: %w", setting, classify(err))
		}
		if v == "off" {
			db.log.Warn("pgkv: a committed transaction may be lost in a crash: the server runs with "+setting+" off",
				"setting", setting)
		}
	}
	return nil
}

// Close closes the connection pool.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// View implements kv.DB.
func (db *DB) View(ctx context.Context, fn func(kv.Reader) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return fmt.Errorf("pgkv view: %w", classify(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	t := &txn{ctx: ctx, tx: tx, db: db}
	if err := fn(t); err != nil {
		return err
	}
	if t.err != nil {
		return t.err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgkv view: %w", classify(err))
	}
	return nil
}

// Update implements kv.DB.
func (db *DB) Update(ctx context.Context, fn func(kv.Txn) error) error {
	start := time.Now()
	var last error
	attempts := 0
	for ; attempts < kv.MinRetries || time.Since(start) < kv.RetryFor; attempts++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		last = db.update(ctx, fn)
		if !retryable(last) {
			return last
		}
		if err := kv.Backoff(ctx, attempts); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: %d attempts in %v, the last: %w", kv.ErrConflict, attempts,
		time.Since(start).Round(time.Millisecond), last)
}

// update runs fn once in a serializable transaction and commits it.
func (db *DB) update(ctx context.Context, fn func(kv.Txn) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return fmt.Errorf("pgkv update: %w", classify(err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	t := &txn{ctx: ctx, tx: tx, db: db}
	if err := fn(t); err != nil {
		return err
	}
	// A statement that failed aborted the transaction even if fn went on.
	if err := t.flush(); err != nil {
		return t.err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgkv commit: %w", classify(err))
	}
	return nil
}

// Batch implements kv.DB.
func (db *DB) Batch(ctx context.Context) kv.Batch {
	return &batch{ctx: ctx, db: db, ops: map[string]batchOp{}}
}

// errAborted reports a statement run after another of the transaction
// failed.
var errAborted = errors.New("pgkv: transaction aborted by an earlier error")

// CreateDatabase creates the database name on the server dsn (a
// postgres:// URL whose user may create databases) and returns the URL of
// the new database: dsn with its path replaced. name must be a plain
// lower-case identifier.
func CreateDatabase(ctx context.Context, dsn, name string) (string, error) {
	if !identifier.MatchString(name) {
		return "", fmt.Errorf("pgkv: database %q is not a plain lower-case identifier", name)
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("pgkv: %q is not a postgres:// URL", dsn)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", fmt.Errorf("pgkv: %w", classify(err))
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgkv: create database %s: %w", name, classify(err))
	}
	u.Path = "/" + name
	return u.String(), nil
}
