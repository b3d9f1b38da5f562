package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/internal/pgtest"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var bg = context.Background()

// schemas numbers the fresh schema each test opens.
var schemas atomic.Int64

func freshSchema() string { return fmt.Sprintf("t%d", schemas.Add(1)) }

// openSchema opens schema on the cluster at dsn; t.Cleanup drops it (after
// the DB is closed, cleanups running last in first out).
func openSchema(t *testing.T, dsn, schema string, o Options) *DB {
	t.Helper()
	t.Cleanup(func() { exec(t, dsn, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	o.Schema = schema
	db, err := Open(bg, dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// exec runs sql on its own connection.
func exec(t *testing.T, dsn, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(bg)
	if _, err := conn.Exec(bg, sql, args...); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}

// count is the number of rows of a query on its own connection.
func count(t *testing.T, dsn, sql string) int {
	t.Helper()
	conn, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(bg)
	var n int
	if err := conn.QueryRow(bg, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestPostgres runs everything that shares one cluster: the kv contract,
// the order of bytea, migrations and limits, each on a fresh schema.
func TestPostgres(t *testing.T) {
	dsn := pgtest.StartCluster(t).DSN
	t.Run("Conformance", func(t *testing.T) {
		kvtest.TestDB(t, func(t *testing.T) kv.DB { return openSchema(t, dsn, freshSchema(), Options{}) })
	})
	t.Run("ByteaOrder", func(t *testing.T) { testByteaOrder(t, dsn) })
	t.Run("MigratesOnce", func(t *testing.T) { testMigratesOnce(t, dsn) })
	t.Run("RacingOpens", func(t *testing.T) { testRacingOpens(t, dsn) })
	t.Run("SchemaTooNew", func(t *testing.T) { testSchemaTooNew(t, dsn) })
	t.Run("TooBig", func(t *testing.T) { testTooBig(t, dsn) })
	t.Run("DurabilityWarning", func(t *testing.T) { testDurabilityWarning(t, dsn) })
	t.Run("UnprivilegedUser", func(t *testing.T) { testUnprivileged(t, dsn) })
	t.Run("BadSchemaName", func(t *testing.T) {
		if _, err := Open(bg, dsn, Options{Schema: `x"; DROP TABLE y; --`}); err == nil {
			t.Fatal("Open took a schema name that is not a plain identifier")
		}
	})
}

// testByteaOrder: the server orders bytea bytewise (0x00 < 0x7f < 0x80 <
// 0xff, a prefix before its extensions), in ORDER BY and in comparisons.
func testByteaOrder(t *testing.T, dsn string) {
	schema := freshSchema()
	db := openSchema(t, dsn, schema, Options{})
	defer db.Close()
	want := [][]byte{{0x00}, {0x00, 0x00}, {0x00, 0xff}, {0x01}, {0x7f}, {0x80}, {0x80, 0x00}, {0xfe, 0xff}, {0xff}, {0xff, 0x00}, {0xff, 0xff}}
	err := db.Update(bg, func(txn kv.Txn) error {
		for i := len(want) - 1; i >= 0; i-- {
			if err := txn.Set(want[i], nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	err = db.pool.QueryRow(bg, "SELECT array_agg(k ORDER BY k) FROM "+schema+".kv").Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("ORDER BY k: %x, want %x", got, want)
		}
	}
	var lt bool
	if err := db.pool.QueryRow(bg, `SELECT '\x7f'::bytea < '\x80'::bytea AND '\x80'::bytea < '\xff00'::bytea`).Scan(&lt); err != nil || !lt {
		t.Fatalf("bytea comparison is not bytewise: %v %v", lt, err)
	}
}

func testMigratesOnce(t *testing.T, dsn string) {
	schema := freshSchema()
	for range 2 {
		db := openSchema(t, dsn, schema, Options{})
		if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	if n := count(t, dsn, "SELECT count(*) FROM "+schema+".migrations"); n != len(migrations) {
		t.Fatalf("%d migrations recorded, want %d", n, len(migrations))
	}
}

func testRacingOpens(t *testing.T, dsn string) {
	schema := freshSchema()
	t.Cleanup(func() { exec(t, dsn, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	const n = 6
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			db, err := Open(bg, dsn, Options{Schema: schema, MaxConns: 2})
			if err != nil {
				t.Error(err)
				return
			}
			defer db.Close()
			if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := count(t, dsn, "SELECT count(*) FROM "+schema+".migrations"); n != len(migrations) {
		t.Fatalf("%d migrations recorded, want %d", n, len(migrations))
	}
}

func testSchemaTooNew(t *testing.T, dsn string) {
	schema := freshSchema()
	openSchema(t, dsn, schema, Options{}).Close()
	exec(t, dsn, "INSERT INTO "+schema+".migrations (version) VALUES ($1)", len(migrations)+1)
	_, err := Open(bg, dsn, Options{Schema: schema})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	if !strings.Contains(err.Error(), "upgrade the gateway") {
		t.Errorf("the error does not say what to do: %v", err)
	}
}

func testTooBig(t *testing.T, dsn string) {
	db := openSchema(t, dsn, freshSchema(), Options{MaxTxnBytes: 1 << 20})
	defer db.Close()
	val := make([]byte, 300<<10)
	err := db.Update(bg, func(txn kv.Txn) error {
		for i := range 4 {
			if err := txn.Set(fmt.Appendf(nil, "k%d", i), val); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, kv.ErrTooBig) {
		t.Fatalf("1.2 MiB in a transaction bounded at 1 MiB: %v, want ErrTooBig", err)
	}
	// A Txn that ignores the error still does not commit.
	err = db.Update(bg, func(txn kv.Txn) error {
		for i := range 4 {
			txn.Set(fmt.Appendf(nil, "k%d", i), val)
		}
		return nil
	})
	if !errors.Is(err, kv.ErrTooBig) {
		t.Fatalf("a Txn that swallowed ErrTooBig: %v", err)
	}
	db.View(bg, func(r kv.Reader) error {
		if _, err := r.Get([]byte("k0")); !errors.Is(err, kv.ErrNotFound) {
			t.Errorf("a transaction that was too big committed: %v", err)
		}
		return nil
	})
}

// testDurabilityWarning: pgtest's clusters run with fsync off, which Open
// must warn about.
func testDurabilityWarning(t *testing.T, dsn string) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	openSchema(t, dsn, freshSchema(), Options{Logger: log}).Close()
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "fsync off") {
		t.Fatalf("no warning about fsync=off: %q", buf.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestUnavailable: when the server stops, a transaction in flight and
// then View, Update and Flush fail, within the bound of their context,
// with an error that wraps kv.ErrUnavailable.
func TestUnavailable(t *testing.T) {
	c := pgtest.StartCluster(t)
	db, err := Open(bg, c.DSN, Options{Schema: freshSchema(), ConnectTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	// A View open when the server goes away fails on its next read.
	err = db.View(bg, func(r kv.Reader) error {
		if _, err := r.Get([]byte("k")); err != nil {
			return fmt.Errorf("before the stop: %w", err)
		}
		c.Stop()
		_, err := r.Get([]byte("k"))
		if !errors.Is(err, kv.ErrUnavailable) {
			t.Errorf("Get in a View after the server stopped: %v, want ErrUnavailable", err)
		}
		return r.Scan(kv.Range{}, func(_, _ []byte) error { return nil })
	})
	if !errors.Is(err, kv.ErrUnavailable) {
		t.Errorf("the View across the stop: %v, want ErrUnavailable", err)
	}
	ops := map[string]func(ctx context.Context) error{
		"View": func(ctx context.Context) error {
			return db.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("k")); return err })
		},
		"Update": func(ctx context.Context) error {
			return db.Update(ctx, func(txn kv.Txn) error { return txn.Set([]byte("k"), []byte("w")) })
		},
		"Flush": func(ctx context.Context) error {
			b := db.Batch(ctx)
			b.Set([]byte("b"), []byte("1"))
			return b.Flush()
		},
	}
	for name, op := range ops {
		for range 2 { // the pooled connection's failure, then a new connection's
			ctx, cancel := context.WithTimeout(bg, 20*time.Second)
			start := time.Now()
			err := op(ctx)
			cancel()
			if !errors.Is(err, kv.ErrUnavailable) {
				t.Errorf("%s with the server down: %v (after %v), want ErrUnavailable", name, err, time.Since(start))
			}
		}
	}
	// pgtest cannot restart a stopped cluster on its data, so recovery of
	// the committed data after a restart is not tested here.
}

// TestPostgresLimits: keys beyond MaxKeySize are refused up front, and a
// range of values larger than a page's byte budget streams whole.
func TestPostgresLimits(t *testing.T) {
	dsn := pgtest.StartCluster(t).DSN
	db := openSchema(t, dsn, freshSchema(), Options{})
	defer db.Close()
	long := bytes.Repeat([]byte{0xa5}, MaxKeySize+1)
	err := db.Update(bg, func(txn kv.Txn) error { return txn.Set(long, nil) })
	if !errors.Is(err, ErrKeyTooLong) {
		t.Errorf("Set of a %d-byte key: %v, want ErrKeyTooLong", len(long), err)
	}
	if err := db.Batch(bg).Set(long, nil); !errors.Is(err, ErrKeyTooLong) {
		t.Errorf("Batch Set of a %d-byte key: %v, want ErrKeyTooLong", len(long), err)
	}
	// The longest key there is, incompressible, fits the index.
	maxKey := make([]byte, MaxKeySize)
	for i := range maxKey {
		maxKey[i] = byte(i*131 + i>>3)
	}
	if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set(maxKey, []byte("x")) }); err != nil {
		t.Fatalf("Set of a %d-byte key: %v", MaxKeySize, err)
	}

	// 24 values of 1 MiB: three times a page's byte budget.
	const n = 24
	val := bytes.Repeat([]byte{7}, 1<<20)
	b := db.Batch(bg)
	for i := range n {
		b.Set(fmt.Appendf(nil, "big/%02d", i), val)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, rev := range []bool{false, true} {
		var got []string
		err := db.View(bg, func(r kv.Reader) error {
			return r.Scan(kv.Range{Start: []byte("big/"), End: []byte("big0"), Reverse: rev}, func(k, v []byte) error {
				if len(v) != len(val) {
					return fmt.Errorf("%s: %d bytes", k, len(v))
				}
				got = append(got, string(k))
				return nil
			})
		})
		if err != nil || len(got) != n {
			t.Fatalf("reverse=%v: %d of %d keys, %v", rev, len(got), n, err)
		}
		for i := 1; i < n; i++ {
			if rev == (got[i-1] < got[i]) {
				t.Fatalf("reverse=%v: out of order: %q", rev, got)
			}
		}
	}
}

// testUnprivileged: once an administrator has migrated the schema, a
// gateway whose role may only read and write the table opens it (no CREATE
// privilege on the database or schema needed).
func testUnprivileged(t *testing.T, dsn string) {
	schema := freshSchema()
	openSchema(t, dsn, schema, Options{}).Close()
	exec(t, dsn, "CREATE ROLE gw LOGIN")
	t.Cleanup(func() { exec(t, dsn, "DROP OWNED BY gw; DROP ROLE gw") })
	exec(t, dsn, "REVOKE CREATE ON DATABASE postgres FROM PUBLIC; REVOKE CREATE ON SCHEMA public FROM PUBLIC")
	exec(t, dsn, fmt.Sprintf("GRANT USAGE ON SCHEMA %[1]s TO gw; GRANT SELECT ON %[1]s.migrations TO gw; "+
		"GRANT SELECT, INSERT, UPDATE, DELETE ON %[1]s.kv TO gw", schema))
	db, err := Open(bg, strings.Replace(dsn, "//nas@", "//gw@", 1), Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open as a role without CREATE: %v", err)
	}
	defer db.Close()
	if err := db.Update(bg, func(txn kv.Txn) error { return txn.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	// A schema that needs migrating cannot be migrated by that role.
	if _, err := Open(bg, strings.Replace(dsn, "//nas@", "//gw@", 1), Options{Schema: freshSchema()}); err == nil {
		t.Fatal("a role without CREATE migrated a new schema")
	}
}

// TestPipelinedWrites: a Txn with more writes than one pipeline holds sends
// them in several, and reads in between see every write before them.
func TestPipelinedWrites(t *testing.T) {
	dsn := pgtest.StartCluster(t).DSN
	db := openSchema(t, dsn, freshSchema(), Options{})
	defer db.Close()
	const n = 3*pipeOps + 7
	err := db.Update(bg, func(txn kv.Txn) error {
		buf := make([]byte, 8)
		for i := range n {
			key := fmt.Appendf(buf[:0], "p/%05d", i) // the buffer is reused: the Txn copies
			if err := txn.Set(key, key); err != nil {
				return err
			}
			if i%100 == 99 {
				if err := txn.Delete(key); err != nil {
					return err
				}
				if _, err := txn.Get(key); !errors.Is(err, kv.ErrNotFound) {
					return fmt.Errorf("Get after a queued Delete: %v", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got int
	err = db.View(bg, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte("p/")), func(k, v []byte) error {
			if !bytes.Equal(k, v) {
				return fmt.Errorf("%q = %q", k, v)
			}
			got++
			return nil
		})
	})
	if want := n - n/100; err != nil || got != want {
		t.Fatalf("%d keys, want %d: %v", got, want, err)
	}
}

// TestClassify: the errors pgx returns when the server is gone are
// ErrUnavailable however they are wrapped, and a query's own failure or
// the caller's cancellation is not. (CI saw a PUT answered 500 during a
// database restart: pgx deallocating a pooled connection's statements
// found the connection closed, an error no other row matched.)
func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"a closed pooled connection", fmt.Errorf("failed to deallocate cached statement(s): %w", fmt.Errorf("x: %w", pgconn.ErrConnClosed)), true},
		{"the server shutting down", &pgconn.PgError{Code: "57P01"}, true},
		{"the server starting up", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"a connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"a refused dial", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"a unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"the caller cancelled", fmt.Errorf("q: %w", context.Canceled), false},
		{"a plain error", errors.New("boom"), false},
	}
	for _, c := range cases {
		if got := errors.Is(classify(c.err), kv.ErrUnavailable); got != c.want {
			t.Errorf("%s: ErrUnavailable %v, want %v (%v)", c.name, got, c.want, c.err)
		}
	}
}
