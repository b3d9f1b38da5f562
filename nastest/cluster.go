package nastest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/s3seg"
	"github.com/agentnas/nas/internal/pgtest"
)

// GatewaysEnv is the environment variable that makes every Start without
// Options.DataDir start that many gateways as one cluster: CI runs the
// client suites so.
const GatewaysEnv = "NAS_TEST_GATEWAYS"

// ChunksEnv set to "s3" makes every cluster keep its segments in a
// bucket of another gateway (Options.ChunksBucket).
const ChunksEnv = "NAS_TEST_CHUNKS"

// databases numbers the databases clusters make in a shared PostgreSQL.
var databases atomic.Int64

// gatewaysWanted is how many gateways Start makes for o: one for a test
// that reuses a data directory (a restart), else Options.Gateways, else
// GatewaysEnv.
func gatewaysWanted(o Options) int {
	if o.DataDir != "" || o.Meta != "" {
		return 1
	}
	if o.Gateways > 0 {
		return o.Gateways
	}
	n, _ := strconv.Atoi(os.Getenv(GatewaysEnv))
	return max(n, 1)
}

// StartCluster starts n gateways sharing one new PostgreSQL database
// (in pgtest.Shared's cluster, else one started for t) and one chunk
// directory, behind a proxy that sends each request to the next gateway
// in turn. The Server's Endpoint is the proxy; Members are the gateways.
func StartCluster(t testing.TB, n int, o Options) *Server {
	t.Helper()
	return startCluster(t, o, n)
}

func startCluster(t testing.TB, o Options, n int) *Server {
	t.Helper()
	pg := o.Postgres
	if pg == nil {
		pg = pgtest.Shared()
	}
	if pg == nil {
		pg = pgtest.StartCluster(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, err := pg.CreateDatabase(ctx, fmt.Sprintf("nastest_%d_%d", os.Getpid(), databases.Add(1)))
	if err != nil {
		t.Fatalf("nastest: %v", err)
	}
	o.Meta, o.ChunksDir, o.KeysDir = dsn, t.TempDir(), t.TempDir()
	if o.ClockSkew == 0 {
		o.ClockSkew = 100 * time.Millisecond
	}
	srv := &Server{}
	if os.Getenv(ChunksEnv) == "s3" {
		o.ChunksBucket = true
	}
	if o.ChunksBucket {
		srv.Bucket = chunksBucket(t)
		o.Chunks = &s3seg.Config{URL: "s3://chunks/segments", Endpoint: srv.Bucket.Endpoint, AccessKey: AccessKey, SecretKey: SecretKey}
	}
	for range n {
		m := o
		m.DataDir = t.TempDir()
		if o.ChunksBucket {
			m.ChunksDir = "" // each stages in its own data directory
		}
		srv.Members = append(srv.Members, startOne(t, m))
	}
	first := srv.Members[0]
	srv.Gateway, srv.DataDir = first.Gateway, first.DataDir
	srv.serveProxy(t)
	t.Cleanup(srv.Stop)
	return srv
}

// serveProxy serves the round-robin proxy on a loopback port. It keeps
// the client's Host header, which signatures cover.
func (s *Server) serveProxy(t testing.TB) {
	t.Helper()
	targets := make([]*url.URL, len(s.Members))
	for i, m := range s.Members {
		targets[i] = &url.URL{Scheme: "http", Host: m.Addr}
	}
	var next atomic.Uint64
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[next.Add(1)%uint64(len(targets))])
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("nastest: proxy: %v", err)
	}
	s.proxy = &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second}
	go s.proxy.Serve(ln)
	s.Addr = ln.Addr().String()
	s.Endpoint = "http://" + s.Addr
}

// stopCluster stops the proxy and every member.
func (s *Server) stopCluster() {
	if s.proxy != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.proxy.Shutdown(ctx)
		cancel()
		s.proxy = nil
	}
	for _, m := range s.Members {
		m.Stop()
	}
}

// Clustered reports whether NAS_TEST_GATEWAYS asks for clusters, for a
// TestMain that starts one PostgreSQL for them all (pgtest.Main).
func Clustered() bool { return gatewaysWanted(Options{}) > 1 }

// SkipInCluster skips t when NAS_TEST_GATEWAYS runs it against clusters:
// for a test of one gateway's own state (its metrics, its clock, its rate
// limits), which the single-gateway run covers.
func SkipInCluster(t testing.TB, why string) {
	t.Helper()
	if Clustered() {
		t.Skipf("one gateway's own state: %s", why)
	}
}

// chunksBucket starts the gateway whose bucket "chunks" holds a
// cluster's segments.
func chunksBucket(t testing.TB) *Server {
	t.Helper()
	b := startOne(t, Options{})
	if _, err := b.Gateway.Branches.CreateRepo(context.Background(), "chunks", branch.CreateRepoOptions{Principal: AccessKey}); err != nil {
		t.Fatalf("nastest: chunk bucket: %v", err)
	}
	return b
}
