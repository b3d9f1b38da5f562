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
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

	dir      string
	cred     *syscall.Credential
	postgres string
	port     int
	cmd      *exec.Cmd
	log      *bytes.Buffer
	done     chan struct{}
	stopped  bool
	mu       sync.Mutex // guards cmd, done and stopped
}

// errMissing marks a failure to find PostgreSQL's binaries.
var errMissing = errors.New("PostgreSQL is not installed")

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
	c, err := Launch()
	if errors.Is(err, errMissing) && os.Getenv(RequireEnv) != "1" {
		t.Skipf("pgtest: %v; install PostgreSQL (Debian: apt-get install postgresql) to run this test", err)
	}
	if err != nil {
		t.Fatalf("pgtest: %v (%s=1 requires PostgreSQL)", err, RequireEnv)
	}
	t.Cleanup(c.Remove)
	return c
}

// Launch starts a cluster that lives until Remove, for a TestMain that
// shares one among its tests (see Main). It runs with fsync off: tests
// need its answers, not its durability.
func Launch() (*Cluster, error) {
	initdb, postgres, err := findBinaries()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMissing, err)
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, cred: cred, postgres: postgres}
	if err := c.initdb(initdb); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for range 3 { // a free port may be taken before postgres binds it
		if c.port, err = freePort(); err != nil {
			break
		}
		if err = c.start(); err == nil {
			return c, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// initdb makes the cluster's data directory.
func (c *Cluster) initdb(initdb string) error {
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return err
		}
	}
	data := filepath.Join(c.dir, "data")
	if out, err := run(c.cred, c.dir, initdb, "-D", data, "-A", "trust", "-U", "nas", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// Stop stops the cluster (a fast shutdown) and waits for it to exit; it
// may be called more than once, and Restart starts it again.
func (c *Cluster) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.cmd == nil {
		return
	}
	c.stopped = true
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// Restart starts a stopped cluster again on the same port (a database
// outage, for fault tests).
func (c *Cluster) Restart() error {
	c.Stop()
	var err error
	for range 10 { // another socket may hold the port a moment (postgres's message names it)
		if err = c.start(); err == nil || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
	return err
}

// Remove stops the cluster and removes its directory.
func (c *Cluster) Remove() {
	c.Stop()
	os.RemoveAll(c.dir)
}

// CreateDatabase creates the database name (a plain lower-case
// identifier) and returns the DSN that connects to it.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.DSN)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return fmt.Sprintf("postgres://nas@127.0.0.1:%d/%s?sslmode=disable", c.port, name), nil
}

// start starts postgres on the cluster's directory and port and waits
// until it accepts connections.
func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.DSN = fmt.Sprintf("postgres://nas@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	c.log, c.done, c.stopped = new(bytes.Buffer), make(chan struct{}), false
	c.cmd = command(c.cred, c.dir, c.postgres, "-D", filepath.Join(c.dir, "data"), "-k", c.dir, "-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=300")
	c.cmd.Stdout, c.cmd.Stderr = c.log, c.log
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	done, cmd := c.done, c.cmd
	go func() { cmd.Wait(); close(done) }()
	if err := c.wait(); err != nil {
		cmd.Process.Kill()
		<-done
		c.stopped = true
		return fmt.Errorf("%w\n%s", err, c.log.String())
	}
	return nil
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

// freePort is a TCP port of 127.0.0.1 free a moment ago, below the
// kernel's ephemeral range where it can be: the kernel gives ports of that
// range to listeners on port 0 and to outgoing connections, and such a
// port could be taken by one of them while the cluster is down between
// Stop and Restart (CI once saw postgres fail to bind its port again).
func freePort() (int, error) {
	if lo := ephemeralLow(); lo > portFloor+100 {
		for range 50 {
			p := portFloor + rand.IntN(lo-portFloor)
			if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portFloor is the lowest port freePort picks: above the well-known and
// commonly configured service ports.
const portFloor = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (0 when
// it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// shared is the cluster Main started for the whole test binary.
var shared *Cluster

// Main runs m's tests and exits, with one cluster they share (Shared)
// when want is true: a TestMain for packages whose every test would
// otherwise start a cluster. Without PostgreSQL installed the tests run
// without one (Shared is nil), unless NAS_REQUIRE_POSTGRES=1.
func Main(m *testing.M, want bool) {
	if want {
		c, err := Launch()
		switch {
		case err == nil:
			shared = c
		case errors.Is(err, errMissing) && os.Getenv(RequireEnv) != "1":
		default:
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if shared != nil {
		shared.Remove()
	}
	os.Exit(code)
}

// Shared is the cluster Main started, or nil.
func Shared() *Cluster { return shared }
