package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentnas/nas/adapter"
	"github.com/agentnas/nas/adapter/adaptertest"
	"github.com/agentnas/nas/internal/pgtest"
)

// binary is the adapter built once for the tests.
var binary string

func TestMain(m *testing.M) {
	path, done, out, err := adaptertest.Build("nas-adapter-postgres")
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	binary = path
	code := m.Run()
	done()
	os.Exit(code)
}

// client speaks the protocol to a running adapter.
type client struct{ *adaptertest.Client }

// start runs the adapter binary with args; t.Cleanup ends it.
func start(t *testing.T, args ...string) *client {
	t.Helper()
	return &client{adaptertest.Start(t, binary, "postgres", args...)}
}

func (c *client) call(req adapter.Request) adapter.Response {
	c.T.Helper()
	return c.Call(req)
}

func (c *client) logged(s string) bool { return c.Logged(s) }

// read reads [off, off+n) of key at version: the bytes, or the error
// code.
func (c *client) read(key, version string, off, n int64) (string, string) {
	c.T.Helper()
	b, code := c.Read(key, version, off, n)
	return string(b), code
}

// list lists every object, limit per page, checking the order, and
// returns them by key.
func (c *client) list(limit int) ([]string, map[string]adapter.Object, *adapter.Error) {
	c.T.Helper()
	var keys []string
	objs := map[string]adapter.Object{}
	after := ""
	for {
		res := c.call(adapter.Request{Op: adapter.OpList, After: after, Limit: limit})
		if res.Error != nil {
			return nil, nil, res.Error
		}
		if len(res.Objects) > limit {
			c.T.Fatalf("page of %d objects for limit %d", len(res.Objects), limit)
		}
		for _, o := range res.Objects {
			if o.Key <= after {
				c.T.Fatalf("key %q after %q", o.Key, after)
			}
			after = o.Key
			keys = append(keys, o.Key)
			objs[o.Key] = o
		}
		if !res.More {
			return keys, objs, nil
		}
	}
}

// setup makes a database with tables and returns a connection to it.
func setup(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	for _, sql := range []string{
		`CREATE TABLE users (id int PRIMARY KEY, name text, note text)`,
		`INSERT INTO users VALUES (2, 'bob', 'says "hi", then
leaves'), (1, 'alice', NULL)`,
		`CREATE SCHEMA shop`,
		`CREATE TABLE shop."Items" (sku text, qty int)`,
		`INSERT INTO shop."Items" VALUES ('x-1', 3)`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return conn
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

const usersCSV = "id,name,note\n1,alice,\n2,bob,\"says \"\"hi\"\", then\nleaves\"\n"

// TestCSV: tables (one schema-qualified, one missing) and a query as
// CSV: listing pages, versions by content, stat, ranged reads, a change
// giving a new version, an old version served while cached and changed
// once not, the database down.
func TestCSV(t *testing.T) {
	cl := pgtest.StartCluster(t)
	conn := setup(t, cl.DSN)
	cache := t.TempDir()
	c := start(t, "--dsn", cl.DSN, "--cache", cache,
		"--table", "users", "--table", "shop.Items", "--table", "missing",
		"--query", "reports/top=SELECT name FROM users ORDER BY id DESC LIMIT 1;")

	keys, objs, e := c.list(2)
	if e != nil {
		t.Fatalf("list: %v\n%s", e, c.Stderr())
	}
	if want := []string{"reports/top.csv", "shop/Items.csv", "users.csv"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	if !c.logged("missing") {
		t.Errorf("stderr does not say the missing table was skipped:\n%s", c.Stderr())
	}
	u := objs["users.csv"]
	if u.Size != int64(len(usersCSV)) || u.Version != sum(usersCSV) || u.SHA256 != u.Version || u.ContentType != "text/csv" {
		t.Errorf("users.csv: %+v, want the size and SHA-256 of %q", u, usersCSV)
	}
	if o := objs["reports/top.csv"]; o.Version != sum("name\nbob\n") {
		t.Errorf("reports/top.csv: %+v", o)
	}
	if o := objs["shop/Items.csv"]; o.Version != sum("sku,qty\nx-1,3\n") {
		t.Errorf("shop/Items.csv: %+v", o)
	}
	if res := c.call(adapter.Request{Op: adapter.OpStat, Key: "users.csv"}); res.Error != nil || *res.Object != u {
		t.Errorf("stat: %+v, want %+v", res, u)
	}
	for _, k := range []string{"missing.csv", "nope.csv"} {
		if res := c.call(adapter.Request{Op: adapter.OpStat, Key: k}); res.Error == nil || res.Error.Code != adapter.CodeNotFound {
			t.Errorf("stat %s: %+v", k, res)
		}
	}
	for _, r := range []struct {
		off, n int64
		want   string
	}{{0, 1 << 20, usersCSV}, {15, 5, "alice"}, {int64(len(usersCSV)) - 7, 100, "leaves\"\n"[1:]}, {u.Size, 5, ""}, {u.Size + 9, 5, ""}, {3, 0, ""}} {
		if got, code := c.read("users.csv", u.Version, r.off, r.n); code != "" || got != r.want {
			t.Errorf("read %d+%d: %q %s, want %q", r.off, r.n, got, code, r.want)
		}
	}

	// A change is a new version; the old one, still cached, is still
	// served (the version names exact bytes), and changed once not.
	if _, err := conn.Exec(context.Background(), `UPDATE users SET name = 'Alice' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	_, objs2, e := c.list(10)
	if e != nil {
		t.Fatal(e)
	}
	u2 := objs2["users.csv"]
	if u2.Version == u.Version || u2.Version != sum(strings.Replace(usersCSV, "alice", "Alice", 1)) {
		t.Errorf("after an update: %+v (before %+v)", u2, u)
	}
	if objs2["shop/Items.csv"] != objs["shop/Items.csv"] {
		t.Errorf("an unchanged table changed version: %+v, %+v", objs2["shop/Items.csv"], objs["shop/Items.csv"])
	}
	if got, code := c.read("users.csv", u.Version, 15, 5); code != "" || got != "alice" {
		t.Errorf("read of the cached old version: %q %s", got, code)
	}
	clear(t, cache)
	if got, code := c.read("users.csv", u.Version, 15, 5); code != adapter.CodeChanged {
		t.Errorf("read of the old version, not cached: %q %q", got, code)
	}
	if got, code := c.read("users.csv", u2.Version, 15, 5); code != "" || got != "Alice" {
		t.Errorf("read of the new version, rendered again: %q %s", got, code)
	}
	if _, code := c.read("users.csv", "../../etc/passwd", 0, 5); code != adapter.CodeChanged {
		t.Errorf("read of a version that is a path: %q", code)
	}

	// The database down: what is cached is still served; the rest is
	// unavailable.
	cl.Stop()
	if got, code := c.read("users.csv", u2.Version, 15, 5); code != "" || got != "Alice" {
		t.Errorf("read of a cached version, database down: %q %s", got, code)
	}
	clear(t, cache)
	if _, code := c.read("users.csv", u2.Version, 15, 5); code != adapter.CodeUnavailable {
		t.Errorf("read, database down: %q", code)
	}
	if _, _, e := c.list(10); e == nil || e.Code != adapter.CodeUnavailable {
		t.Errorf("list, database down: %+v", e)
	}
	if res := c.call(adapter.Request{Op: adapter.OpStat, Key: "users.csv"}); res.Error == nil || res.Error.Code != adapter.CodeUnavailable {
		t.Errorf("stat, database down: %+v", res)
	}
}

// clear empties the cache directory.
func clear(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJSONL: the same tables as JSON Lines, and a cache bounded to
// nothing keeps only the objects of the last rendering.
func TestJSONL(t *testing.T) {
	dsn := pgtest.Start(t)
	conn := setup(t, dsn)
	cache := t.TempDir()
	c := start(t, "--dsn", dsn, "--cache", cache, "--format", "jsonl", "--cache-max", "0",
		"--table", "public.users", "--query", "n=SELECT count(*) AS n FROM users")
	keys, objs, e := c.list(1)
	if e != nil {
		t.Fatalf("list: %v\n%s", e, c.Stderr())
	}
	if want := []string{"n.jsonl", "public/users.jsonl"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	want := `{"id":1,"name":"alice","note":null}` + "\n" + `{"id":2,"name":"bob","note":"says \"hi\", then\nleaves"}` + "\n"
	u := objs["public/users.jsonl"]
	if u.Version != sum(want) || u.ContentType != "application/x-ndjson" {
		t.Errorf("users.jsonl: %+v, want the SHA-256 of %q", u, want)
	}
	if got, code := c.read("public/users.jsonl", u.Version, 0, u.Size); code != "" || got != want {
		t.Errorf("read: %q %s, want %q", got, code, want)
	}
	if got, code := c.read("n.jsonl", objs["n.jsonl"].Version, 0, 100); got != `{"n":2}`+"\n" {
		t.Errorf("read n.jsonl: %q %s", got, code)
	}
	if _, err := conn.Exec(context.Background(), `DELETE FROM users WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	if _, _, e := c.list(10); e != nil {
		t.Fatal(e)
	}
	entries, _ := os.ReadDir(cache)
	if len(entries) != 2 {
		t.Errorf("cache of at most 0 bytes holds %d files, want the 2 just rendered", len(entries))
	}
	if _, code := c.read("public/users.jsonl", u.Version, 0, 5); code != adapter.CodeChanged {
		t.Errorf("read of a version trimmed from the cache and changed: %q", code)
	}
}

func TestDefs(t *testing.T) {
	for _, bad := range [][2][]string{
		{{"a."}, nil}, {{".x"}, nil}, {nil, {"noequals"}}, {nil, {"=SELECT 1"}}, {nil, {"../x=SELECT 1"}},
		{nil, {"a//b=SELECT 1"}}, {{"t"}, {"t=SELECT 1"}},
	} {
		if _, err := defs(bad[0], bad[1], "csv"); err == nil {
			t.Errorf("defs(%q, %q) accepted", bad[0], bad[1])
		}
	}
	if !hasPassword("postgres://u:pw@h/db") || !hasPassword("host=h password=pw") || hasPassword("postgres://u@h/db") || hasPassword("host=h user=u") {
		t.Error("hasPassword")
	}
}
