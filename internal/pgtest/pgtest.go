// Package pgtest starts throwaway PostgreSQL clusters for tests. It is a
// test helper: import it only from _test.go files.
//
// Every Start makes a cluster of its own (initdb into a fresh directory,
// postgres on a free port of 127.0.0.1 and a private Unix socket
// directory), so tests of one package, or of packages run in parallel,
// never share data; t.Cleanup stops it and removes its directory. A
// cluster costs about a second to make (initdb --no-sync, fsync=off).
//
// The binaries are looked for in /usr/lib/postgresql/*/bin (the newest
// major version first), then on PATH. Without them the test is skipped,
// unless NAS_REQUIRE_POSTGRES=1 is set (as CI does): then it fails. As
// root, initdb and postgres run as the postgres system user (nobody when
// there is none), since PostgreSQL refuses to run as root; the cluster's
// directory is made in $TMPDIR (default /tmp), which that user must be
// able to traverse.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv is the environment variable that turns a missing PostgreSQL
// into a failure instead of a skip.
const RequireEnv = "NAS_REQUIRE_POSTGRES"

// startTimeout bounds how long a cluster may take to accept connections.
const startTimeout = 30 * time.Second

// Cluster is a running throwaway PostgreSQL cluster.
type Cluster struct {
	// DSN connects to the postgres database as the superuser nas,
	// without a password (trust authentication) over TCP.
	DSN string

	dir  string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
	once sync.Once
}

// Start starts a cluster for t and returns its DSN; see StartCluster.
func Start(t testing.TB) (dsn string) {
	t.Helper()
	return StartCluster(t).DSN
}

// StartCluster starts a cluster for t, stopped and removed by t.Cleanup.
// It skips t when PostgreSQL is not installed (fails it with
// NAS_REQUIRE_POSTGRES=1).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	initdb, postgres, err := findBinaries()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("pgtest: %v (%s=1 requires PostgreSQL)", err, RequireEnv)
		}
		t.Skipf("pgtest: %v; install PostgreSQL (Debian: apt-get install postgresql) to run this test", err)
	}
	cred, err := credential()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := run(cred, dir, initdb, "-D", data, "-A", "trust", "-U", "nas", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	var lastErr error
	for range 3 { // a free port may be taken before postgres binds it
		c, err := start(cred, dir, postgres)
		if err == nil {
			t.Cleanup(c.Stop)
			return c
		}
		lastErr = err
	}
	t.Fatalf("pgtest: %v", lastErr)
	return nil
}

// Stop stops the cluster (a fast shutdown) and waits for it to exit; it
// may be called more than once. Its directory is removed by t.Cleanup.
func (c *Cluster) Stop() {
	c.once.Do(func() {
		c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			c.cmd.Process.Kill()
			<-c.done
		}
	})
}

// start starts postgres on the cluster in dir and waits until it accepts
// connections.
func start(cred *syscall.Credential, dir, postgres string) (*Cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		DSN:  fmt.Sprintf("postgres://nas@127.0.0.1:%d/postgres?sslmode=disable", port),
		dir:  dir,
		log:  new(bytes.Buffer),
		done: make(chan struct{}),
	}
	c.cmd = command(cred, dir, postgres, "-D", filepath.Join(dir, "data"), "-k", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off")
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	if err := c.wait(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("%w\n%s", err, c.log.String())
	}
	return c, nil
}

// wait waits until the cluster accepts connections, exits or takes too
// long.
func (c *Cluster) wait() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.DSN)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited before accepting connections: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections within %v: %w", startTimeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// findBinaries finds initdb and postgres.
func findBinaries() (initdb, postgres string, err error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isFile(i) && isFile(p) {
			return i, p, nil
		}
	}
	i, err1 := exec.LookPath("initdb")
	p, err2 := exec.LookPath("postgres")
	if err := errors.Join(err1, err2); err != nil {
		return "", "", fmt.Errorf("no initdb and postgres in /usr/lib/postgresql/*/bin or on PATH: %w", err)
	}
	return i, p, nil
}

// versionOf is the major version in /usr/lib/postgresql/VERSION/bin.
func versionOf(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// credential is who runs PostgreSQL: nil for ourselves, or the postgres
// user (else nobody) when we are root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var errs []error
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err := errors.Join(err1, err2); err != nil {
			errs = append(errs, err)
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root and no user to run PostgreSQL as: %w", errors.Join(errs...))
}

// command is name run as cred (nil: ourselves) in dir.
func command(cred *syscall.Credential, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	// A test binary that dies (a -timeout panic, a kill) leaves no
	// postgres running: SIGQUIT is its immediate shutdown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	if cred != nil {
		cmd.Env = append(cmd.Env, "HOME="+dir)
	}
	return cmd
}

// run runs name to completion and returns its output.
func run(cred *syscall.Credential, dir, name string, args ...string) ([]byte, error) {
	return command(cred, dir, name, args...).CombinedOutput()
}

// freePort is a TCP port of 127.0.0.1 free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
