package source_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentnas/nas/internal/pgtest"
	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/source"
)

// TestPostgresAdapterAttach: tables and a named query of a real
// PostgreSQL as CSV files through the gateway: read whole and by range; a
// refresh after an update shows the drift as a diff; a cached pin still
// reads while the database is down; without it, 503.
func TestPostgresAdapterAttach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.StartCluster(t)
	conn, err := pgx.Connect(ctx, db.DSN)
	must(t, err)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE users (id int PRIMARY KEY, name text)`)
	exec(`INSERT INTO users VALUES (1, 'ada'), (2, 'grace, "the admiral"')`)
	exec(`CREATE TABLE orders (id int PRIMARY KEY, total numeric)`)
	exec(`INSERT INTO orders VALUES (10, 99.5)`)
	conn.Close(ctx)

	adapters := t.TempDir()
	prog := nastest.Build(t, "cmd/nas-adapter-postgres", adapters)
	cache := t.TempDir()
	gw := startGateway(t, source.Options{Adapters: adapters, AdapterTimeout: 10 * time.Second})
	gw.mkRepo(t, "shop")
	info := gw.attach(t, "shop", "db/", "exec:"+prog, "", map[string]any{"args": []string{"--dsn", db.DSN, "--cache", cache,
		"--table", "users", "--table", "orders", "--query", "reports/count=SELECT count(*) AS n FROM users"}})
	if info["listed"] != 3.0 {
		t.Fatalf("attach: %v", info)
	}
	users := "id,name\n1,ada\n2,\"grace, \"\"the admiral\"\"\"\n"
	mustGet(t, gw.S3, "shop", "db/users.csv", []byte(users))
	mustGet(t, gw.S3, "shop", "db/reports/count.csv", []byte("n\n2\n"))
	if b, err := get(t, gw.S3, "shop", "db/users.csv", "bytes=8-12"); err != nil || string(b) != "1,ada" {
		t.Fatalf("range: %q %v", b, err)
	}

	conn, err = pgx.Connect(ctx, db.DSN)
	must(t, err)
	exec(`INSERT INTO users VALUES (3, 'linus')`)
	conn.Close(ctx)
	head := gw.owner(t, "branch/get", map[string]any{"repo": "shop", "name": "main"})["branch"].(map[string]any)["head"].(string)
	info = gw.refresh(t, info["id"].(string))
	if got := gw.diff(t, "shop", head, info["commit"].(string)); strings.Join(got, ",") != "M db/reports/count.csv,M db/users.csv" {
		t.Fatalf("diff after an insert: %q", got)
	}
	mustGet(t, gw.S3, "shop", "db/users.csv", []byte(users+"3,linus\n"))

	db.Stop()
	mustGet(t, gw.S3, "shop", "db/reports/count.csv", []byte("n\n3\n")) // rendered by the refresh's listing, kept by the adapter
	// The adapter's cache gone too: what is not local cannot be read.
	must(t, os.RemoveAll(cache))
	must(t, os.Mkdir(cache, 0o700))
	_, err = get(t, gw.S3, "shop", "db/orders.csv", "")
	if _, st := errCode(err); st != http.StatusServiceUnavailable {
		t.Fatalf("orders.csv with the database and the cache gone: %v, want 503", err)
	}
}
