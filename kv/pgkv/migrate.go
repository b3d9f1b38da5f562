package pgkv

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
)

// ErrSchemaTooNew is returned by Open when the database's schema was
// migrated by a newer version of the engine than this one: running on it
// could misread or damage data, so the gateway must be upgraded.
var ErrSchemaTooNew = errors.New("pgkv: database schema is newer than this gateway knows")

// migrations are the schema's versions in order: migrations[i] brings the
// schema from version i to i+1. A released migration never changes; a
// change of schema is a new one at the end. "%s" is the quoted schema.
var migrations = []string{
	// 1: the key-value table; bytea's order is bytewise.
	`CREATE TABLE %s.kv (k bytea PRIMARY KEY, v bytea NOT NULL)`,
}

// migrate brings the schema up to date, one migration per transaction.
// Each transaction first takes an advisory lock of the schema, so that
// gateways starting at once apply every migration once: the others wait,
// then find it applied.
func (db *DB) migrate(ctx context.Context, schema string) error {
	for {
		done, err := db.migrateStep(ctx, schema, migrations)
		if err != nil {
			return fmt.Errorf("pgkv: migrate schema %s: %w", schema, classify(err))
		}
		if done {
			return nil
		}
	}
}

// lockKey is the advisory lock that serializes the migrations of schema.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentnas/pgkv migrations " + schema))
	return int64(h.Sum64())
}

// migrateStep applies the first migration the schema lacks; done reports
// that there was none.
func (db *DB) migrateStep(ctx context.Context, schema string, ms []string) (done bool, err error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema)); err != nil {
		return false, err
	}
	s := pgx.Identifier{schema}.Sanitize()
	if err := createTables(ctx, tx, schema); err != nil {
		return false, err
	}
	var version int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+s+".migrations").Scan(&version); err != nil {
		return false, err
	}
	switch {
	case version > len(ms):
		return false, fmt.Errorf("%w: schema %s is at version %d, this gateway knows up to %d; upgrade the gateway",
			ErrSchemaTooNew, schema, version, len(ms))
	case version == len(ms):
		return true, tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(ms[version], s)); err != nil {
		return false, fmt.Errorf("migration %d: %w", version+1, err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+s+".migrations (version) VALUES ($1)", version+1); err != nil {
		return false, err
	}
	db.log.Info("pgkv: migrated", "schema", schema, "version", version+1)
	return false, tx.Commit(ctx)
}

// createTables creates the schema and its migrations table unless they
// exist; checking first lets a gateway run without the CREATE privilege on
// a database whose schema an administrator made.
func createTables(ctx context.Context, tx pgx.Tx, schema string) error {
	s := pgx.Identifier{schema}.Sanitize()
	var haveSchema, haveTable bool
	err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1), to_regclass($2) IS NOT NULL",
		schema, s+".migrations").Scan(&haveSchema, &haveTable)
	if err != nil {
		return err
	}
	if !haveSchema {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA "+s); err != nil {
			return err
		}
	}
	if !haveTable {
		_, err := tx.Exec(ctx, "CREATE TABLE "+s+".migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
		return err
	}
	return nil
}
