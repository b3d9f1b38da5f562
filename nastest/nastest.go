// Package nastest starts a real gateway on loopback for tests: the same
// handlers, kv store and chunk store as `nas serve`, on 127.0.0.1:0 with a
// data directory in t.TempDir().
package nastest

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/cas/s3seg"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/internal/pgtest"
	"github.com/agentnas/nas/source"
)

// Owner credentials of every test server.
const (
	AccessKey = "AKIANASTESTOWNER0001"
	SecretKey = "nastest/owner/secret/key/0123456789abcdef"
)

// Server is a running test gateway.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Addr     string // 127.0.0.1:PORT
	DataDir  string
	Gateway  *gateway.Gateway

	// Members are the gateways behind the proxy at Endpoint, when Start
	// made a cluster (Gateway is the first); nil for one gateway.
	Members []*Server
	// Bucket is the gateway whose bucket "chunks" holds a cluster's
	// segments (Options.ChunksBucket).
	Bucket *Server

	cancel context.CancelFunc
	done   chan error
	proxy  *http.Server // the round-robin proxy of a cluster
}

// Options tunes Start.
type Options struct {
	// DataDir reuses a data directory (to test restarts); empty means a new
	// temporary one.
	DataDir string
	// Domains enables virtual-host style for these domains.
	Domains []string
	// Addr is the listening address (default 127.0.0.1:0); a test that
	// restarts a gateway gives the old one's address to keep its clients.
	Addr string
	// Log receives the server's logs; nil discards them unless
	// NAS_TEST_LOG is set.
	Log *slog.Logger
	// Bodies bounds slow request bodies (tests shorten the defaults).
	Bodies gateway.BodyLimits
	// Sources tunes the attached sources (an adapter folder, timeouts).
	Sources source.Options
	// Hooks tunes webhook deliveries (tests poll and back off fast).
	Hooks hook.Options
	// Meta and ChunksDir share a metadata store and a chunk directory
	// with other gateways (gateway.Config); empty: the data directory's.
	Meta, ChunksDir string
	// KeysDir is the keyring of sealed content's keys ("": DATA/keys);
	// gateways sharing a metadata store share it too.
	KeysDir string
	// ClockSkew is gateway.Config's; a cluster's gateways share this
	// machine's clock, so StartCluster makes it 100 ms.
	ClockSkew time.Duration
	// Gateways above one makes Start start a cluster (StartCluster); zero
	// means NAS_TEST_GATEWAYS, else one.
	Gateways int
	// Postgres is the PostgreSQL a cluster makes its database in (a test
	// that stops it); nil means pgtest.Shared, else one for the test.
	Postgres *pgtest.Cluster
	// ChunksBucket makes a cluster keep its chunk segments in a bucket of
	// another gateway (Server.Bucket) instead of a shared directory.
	ChunksBucket bool
	// Chunks is the bucket segments live in (gateway.Config.Chunks).
	Chunks *s3seg.Config
	// Checks tunes pre-merge checks (a command folder; tests poll and
	// back off fast).
	Checks check.Options
	// DirectWrites is gateway.Config's (nas serve --direct-writes).
	DirectWrites bool
	// MinFree is gateway.Config's (nas serve --min-free).
	MinFree int64
}

// Start starts a gateway and stops it when the test ends. With
// Options.Gateways (or NAS_TEST_GATEWAYS) above one it starts that many
// gateways sharing one PostgreSQL database and one chunk directory
// behind a round-robin proxy (see StartCluster).
func Start(t testing.TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if n := gatewaysWanted(o); n > 1 {
		return startCluster(t, o, n)
	}
	return startOne(t, o)
}

// startOne starts one gateway.
func startOne(t testing.TB, o Options) *Server {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
		if os.Getenv("NAS_TEST_LOG") != "" {
			o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	g, err := gateway.Open(gateway.Config{
		DataDir: o.DataDir,
		Owner:   auth.Owner{AccessKey: AccessKey, SecretKey: SecretKey},
		Domains: o.Domains,
		Log:     o.Log,
		Bodies:  o.Bodies,
		Sources: o.Sources,
		Hooks:   o.Hooks,
		Meta:    o.Meta, ChunksDir: o.ChunksDir, KeysDir: o.KeysDir, Chunks: o.Chunks,
		Checks: o.Checks, ClockSkew: o.ClockSkew, DirectWrites: o.DirectWrites, MinFree: o.MinFree,
	})
	if err != nil {
		t.Fatalf("open gateway: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{DataDir: o.DataDir, Gateway: g, cancel: cancel, done: make(chan error, 1)}
	g.Start()
	a, err := serve(ctx, s, g.Handler(), o)
	if err != nil {
		cancel()
		g.Close()
		t.Fatalf("serve: %v", err)
	}
	s.Addr = a.String()
	s.Endpoint = "http://" + s.Addr
	t.Cleanup(s.Stop)
	return s
}

// serve starts serving h on o.Addr, its result going to s.done, and
// returns the address once it listens. A test that restarts a gateway
// on the address it just closed can find the port taken for a moment
// (the kernel may give it to an outgoing connection meanwhile): a busy
// fixed address is tried again for up to 10 s.
func serve(ctx context.Context, s *Server, h http.Handler, o Options) (net.Addr, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := make(chan net.Addr, 1)
		go func() {
			s.done <- gateway.Serve(ctx, h, gateway.ServeOptions{Addr: o.Addr, Ready: func(a net.Addr) { ready <- a }}, o.Log)
		}()
		select {
		case a := <-ready:
			return a, nil
		case err := <-s.done:
			if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
				return nil, err
			}
			time.Sleep(100 * time.Millisecond)
		case <-time.After(time.Until(deadline)):
			return nil, errors.New("gateway did not start")
		}
	}
}

// Stop shuts the server down and closes its data directory; it is safe to
// call twice.
func (s *Server) Stop() {
	if s.Members != nil {
		s.stopCluster()
		return
	}
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	if err := <-s.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = err
	}
	s.Gateway.Close()
}

// Build builds the command pkg of this module (e.g. "cmd/nas-adapter-http")
// into dir and returns the program's path.
func Build(t testing.TB, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, "github.com/agentnas/nas/"+pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}
