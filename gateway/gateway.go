package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/api"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/cas/s3seg"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/metrics"
	"github.com/agentnas/nas/policy"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/s3api"
	"github.com/agentnas/nas/search"
	"github.com/agentnas/nas/source"
	"github.com/agentnas/nas/sts"
	"github.com/agentnas/nas/tree"
	"github.com/agentnas/nas/ui"
	"golang.org/x/sync/singleflight"
)

// Config configures a Gateway.
type Config struct {
	DataDir string
	Owner   auth.Owner
	Region  string
	Domains []string
	Log     *slog.Logger
	// WrapDB, if set, decorates the kv store every service uses (tracing,
	// tests).
	WrapDB func(kv.DB) kv.DB
	// OnSync is passed to the chunk store (cas.Options.OnSync).
	OnSync func(path string)
	// Sources tunes attached sources (retries, timeouts; tests). Its
	// OnCommit is the gateway's flight recorder.
	Sources source.Options
	// Bodies bounds how slowly clients may send request bodies.
	Bodies BodyLimits
	// Hooks tunes webhook deliveries (poll, timeout, backoff; tests).
	Hooks hook.Options
	// KV sizes the embedded Badger store's memory (kv.BadgerSizing; its
	// zero value is kv.DefaultBadgerMemory's split). A postgres:// Meta
	// ignores it.
	KV kv.BadgerSizing
	// Meta is the metadata store: "" for the embedded Badger store under
	// DATA/kv, or a postgres:// URL of a database several gateways share
	// (IsSharedMeta).
	Meta string
	// ChunksDir is where chunk segments live ("": DATA/chunks). Gateways
	// sharing a metadata store must share it too (one directory on a
	// shared file system), unless Chunks names a bucket.
	ChunksDir string
	// Chunks, when set, is the bucket the segments live in instead
	// (s3seg.Config: s3://BUCKET/PREFIX, endpoint, keys); ChunksDir then
	// only stages the segments this gateway's uploads write.
	Chunks *s3seg.Config
	// DirectWrites writes large segments with O_DIRECT
	// (cas.Options.DirectWrites; nas serve --direct-writes).
	DirectWrites bool
	// MinFree is the free space uploads leave on the file systems of the
	// data directory and of ChunksDir (cas.Options.MinFree; nas serve
	// --min-free): 0 the default, the smaller of 1 GiB and 5% of each;
	// negative, no floor.
	MinFree int64
	// Checks tunes pre-merge checks: the folder command checks run from
	// (--check-commands), timeouts, retries.
	Checks check.Options
	// KeysDir is the keyring of sensitive content's domain keys ("":
	// DATA/keys). Keep it out of backups of the data directory, or
	// destroying a key does not reach them.
	KeysDir string
	// ClockSkew is the clock difference tolerated between gateways
	// sharing a metadata store, and their chunk bucket (0: a minute): a
	// collection keeps the segments written within it of its start.
	ClockSkew time.Duration
}

// Gateway is an opened data directory with its handlers.
type Gateway struct {
	DB        kv.DB // the metadata store, undecorated
	Chunks    *cas.Store
	Branches  *branch.Service
	Leases    *auth.Leases
	Auth      *auth.Authority
	Recorder  *record.Recorder
	Manifests *record.Manifests
	S3        *s3api.Server
	API       *api.Handler
	STS       *sts.Handler
	// UI is the control room at ui.Prefix.
	UI      *ui.Handler
	Gates   *gate.Service
	Sources *source.Registry
	// Search is the full-text indexes, under DATA/index.
	Search *search.Service
	// Hooks are the repositories' webhooks, delivered by hookDispatcher.
	Hooks          *hook.Store
	hookDispatcher *hook.Dispatcher
	// members is this gateway's entry among those sharing the metadata
	// store (nil on the embedded store).
	members *members
	// Checks are the repositories' pre-merge checks and their runner.
	Checks *check.Service
	// Metrics is the gateway's registry (MetricsPath, MetricsHandler).
	Metrics *metrics.Metrics
	kv      kv.DB // the store every service uses (decorated)
	log     *slog.Logger
	bodies  BodyLimits
	// readiness runs one readiness check at a time; probes that come
	// while it runs share its answer, so a hung store holds one check,
	// not one per probe.
	readiness singleflight.Group

	stop context.CancelFunc // ends background work started by Start
	bg   sync.WaitGroup     // background goroutines
}

// Open opens (creating if needed) the data directory. When a step fails,
// what the earlier steps opened is closed again, so the directory can be
// opened anew.
func Open(c Config) (g *Gateway, err error) {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	var undo []func() error // closes what is open, newest first
	defer func() {
		if err == nil {
			return
		}
		for i := len(undo) - 1; i >= 0; i-- {
			if cerr := undo[i](); cerr != nil {
				c.Log.Error("closing after a failed open", "err", cerr)
			}
		}
	}()
	mctx, cancel := context.WithTimeout(context.Background(), metaTimeout)
	db, err := openMeta(mctx, c)
	cancel()
	if err != nil {
		return nil, err
	}
	undo = append(undo, db.Close)
	var kdb kv.DB = db
	if c.WrapDB != nil {
		kdb = c.WrapDB(db)
	}
	m := metrics.New()
	kdb = m.WrapDB(kdb)
	if c.ChunksDir == "" {
		c.ChunksDir = filepath.Join(c.DataDir, "chunks")
	}
	remote, err := openRemote(c)
	if err != nil {
		return nil, err
	}
	chunks, err := cas.Open(c.ChunksDir, kdb, cas.Options{Log: c.Log, OnSync: c.OnSync, Observer: m.Chunks(), Remote: remote, DirectWrites: c.DirectWrites,
		MinFree: c.MinFree, FreeDirs: []string{c.DataDir}})
	if err != nil {
		return nil, err
	}
	undo = append(undo, chunks.Close)
	ctx := context.Background()
	b := branch.New(kdb, chunks, c.Log)
	if c.KeysDir == "" {
		c.KeysDir = filepath.Join(c.DataDir, "keys")
	}
	keys, err := keyring.Open(c.KeysDir)
	if err != nil {
		return nil, err
	}
	b.SetKeys(keys)
	if err := b.SettleTrash(ctx); err != nil {
		return nil, fmt.Errorf("finish the trash of an interrupted merge: %w", err)
	}
	leases, err := auth.OpenLeases(ctx, kdb)
	if err != nil {
		return nil, err
	}
	g = assemble(c, stores{db: db, kdb: kdb, chunks: chunks, b: b, leases: leases, m: m})
	if IsSharedMeta(c.Meta) {
		if err := g.share(ctx, c); err != nil {
			return nil, err
		}
	}
	g.watch()
	return g, nil
}

// stores are what Open opened, for assemble.
type stores struct {
	db     kv.DB
	kdb    kv.DB // db as the services see it (decorated)
	chunks *cas.Store
	b      *branch.Service
	leases *auth.Leases
	m      *metrics.Metrics
}

// assemble builds the services over the opened stores; nothing in it can
// fail.
func assemble(c Config, st stores) *Gateway {
	kdb, b := st.kdb, st.b
	g := &Gateway{DB: st.db, Chunks: st.chunks, Branches: b, Leases: st.leases, Metrics: st.m, kv: kdb, log: c.Log, bodies: c.Bodies,
		Recorder: record.New(kdb, record.Options{}), Manifests: record.NewManifests(kdb, manifestOptions(c))}
	so := c.Sources
	if so.Log == nil {
		so.Log = c.Log
	}
	so.OnCommit = g.recordSourceCommit
	so.Peers = g.peers
	if so.GitMirrors == "" {
		so.GitMirrors = filepath.Join(c.DataDir, "sources", "git")
	}
	g.Sources = source.New(kdb, b, so)
	b.AddRoots(g.Sources.Materializer()) // the side index is a GC root
	g.Auth = auth.New(auth.Config{Owner: c.Owner, Leases: st.leases, Branches: b, Recorder: g.Recorder, Reads: g.Manifests,
		Domains: c.Domains, Log: c.Log, Observer: st.m.Door()})
	g.S3 = s3api.New(s3api.Config{Branches: b, Auth: g.Auth, OwnerKey: c.Owner.AccessKey, Region: c.Region, Domains: c.Domains, Log: c.Log,
		Lazy: g.Sources.Materializer()})
	g.Gates = gate.New(b, kdb, st.leases, g.Recorder)
	g.Auth.SetGuard(func(ctx context.Context, repo string) (*policy.Guard, error) {
		pol, err := g.Gates.Policy(ctx, repo)
		if err != nil {
			return nil, err
		}
		return pol.Guard, nil
	})
	g.API = api.New(api.Config{Branches: b, Auth: g.Auth, Recorder: g.Recorder, Gates: g.Gates, Log: c.Log})
	g.API.SetSources(g.Sources)
	g.Hooks = hook.NewStore(kdb, g.Recorder)
	ho := c.Hooks
	if ho.Log == nil {
		ho.Log = c.Log
	}
	ho.Changes, ho.Region = g.commitChanges, cmp.Or(c.Region, "us-east-1")
	g.hookDispatcher = hook.NewDispatcher(g.Hooks, ho)
	g.API.SetHooks(g.Hooks)
	co := c.Checks
	if co.Log == nil {
		co.Log = c.Log
	}
	co.Recorder = g.Recorder
	co.OnFinal = func(ctx context.Context, proposal string) {
		if err := g.Gates.ChecksDone(ctx, proposal); err != nil {
			c.Log.Warn("merging a proposal whose checks passed", "proposal", proposal, "err", err)
		}
	}
	g.Checks = check.New(kdb, co)
	g.Gates.SetChecks(g.Checks)
	g.API.SetChecks(g.Checks)
	g.Search = search.New(filepath.Join(c.DataDir, "index"), b)
	g.API.SetSearch(g.Search)
	g.STS = sts.New(g.Auth, b, c.Log)
	g.UI = ui.New(g.Auth, c.Log)
	return g
}

// peers reports whether other gateways share the metadata store.
func (g *Gateway) peers(ctx context.Context) (bool, error) {
	if g.members == nil {
		return false, nil
	}
	return g.members.peers(ctx)
}

// manifestOptions buffer reads in memory on the embedded store; with a
// shared one every read is written before it is answered (an Add that
// fills the buffer flushes it), since the commit that names a run's read
// manifest may be made by another gateway.
func manifestOptions(c Config) record.ManifestOptions {
	if IsSharedMeta(c.Meta) {
		return record.ManifestOptions{MaxBuffered: 1}
	}
	return record.ManifestOptions{}
}

// watch feeds the metrics from the services: collections, lazy-source
// fetches and the gate queue.
func (g *Gateway) watch() {
	m := g.Metrics
	g.Branches.OnCollect(func(st branch.GCStats, err error) {
		m.ObserveGC(metrics.GC{Chunks: st.Chunks.Chunks, Bytes: st.Chunks.Bytes, SegmentBytes: st.Chunks.SegmentBytes, Err: err})
	})
	m.WatchSources(func() metrics.Sources {
		st := g.Sources.Materializer().Stats()
		return metrics.Sources{Fetches: st.Fetches, FetchedBytes: st.FetchedBytes, FetchErrors: st.FetchErrors}
	})
	m.WatchCaches(g.cacheStats)
	g.Gates.OnOutcome = m.GateOutcome
	m.WatchGates(func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		gs, err := g.Gates.ListGates(ctx, "pending")
		if err != nil {
			g.log.Warn("counting pending gates for the metrics", "err", err)
			return math.NaN()
		}
		return float64(len(gs))
	})
}

// cacheStats are the gateway's caches' counters: decoded tree nodes, open
// segment files and lazy sources' blocks (local against fetched).
func (g *Gateway) cacheStats() []metrics.Cache {
	out := []metrics.Cache{}
	if c, ok := g.Branches.Nodes().(*tree.Cache); ok {
		st := c.Stats()
		out = append(out, metrics.Cache{Name: "tree_nodes", Hits: st.Hits, Misses: st.Misses})
	}
	fc := g.Branches.Chunks().FileCacheStats()
	src := g.Sources.Materializer().Stats()
	return append(out, metrics.Cache{Name: "segment_files", Hits: fc.Hits, Misses: fc.Misses},
		metrics.Cache{Name: "source_blocks", Hits: src.LocalBlocks, Misses: src.RemoteBlocks})
}

// recordSourceCommit writes the commit an attach or refresh is about to
// make to the flight recorder, before the branch moves.
func (g *Gateway) recordSourceCommit(ctx context.Context, repo, br string, id manifest.CommitID, message, principal string) error {
	e := record.Event{Kind: record.KindCommit, Principal: principal, Repo: repo, Branch: br,
		Subject: record.Subject{Commit: id.String()}, Details: map[string]string{"detail": message}}
	_, err := g.Recorder.Append(ctx, e)
	return err
}

// Start begins the gateway's background work (usage write-behind, kv
// maintenance); Close stops it.
func (g *Gateway) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	runManifests := func(ctx context.Context) { _ = g.Manifests.Run(ctx) }
	runExpiry, runHooks, runChecks := g.runExpiry, g.hookDispatcher.Run, g.Checks.Run
	if g.members != nil {
		runExpiry, runHooks = g.members.duty("expiry", runExpiry), g.members.duty("hooks", runHooks)
		runChecks = g.members.duty("checks", runChecks)
	}
	runs := []func(context.Context){g.Leases.Run, runManifests, g.Sources.Run, runExpiry, runHooks, runChecks}
	for _, run := range runs {
		g.bg.Add(1)
		go func() {
			defer g.bg.Done()
			run(ctx)
		}()
	}
}

// Close stops background work and releases the data directory.
func (g *Gateway) Close() error {
	if g.stop != nil {
		g.stop()
		g.bg.Wait()
	}
	g.Leases.Close()
	g.Sources.Close()
	if err := g.Search.Close(); err != nil {
		g.log.Error("closing the search indexes", "err", err)
	}
	if err := g.Manifests.Close(); err != nil {
		g.log.Error("closing read manifests", "err", err)
	}
	g.Chunks.Close()
	if g.members != nil {
		g.members.leave()
	}
	return g.DB.Close()
}

// Handler returns the HTTP handler: the health and metrics endpoints,
// MCP at MCPPath, the control room at ui.Prefix, the control API under
// /_nas/ and S3 for everything else, each request
// written to the access log and counted. It deliberately is not an
// http.ServeMux, which would clean paths and so rewrite object keys.
func (g *Gateway) Handler() http.Handler {
	door := newMCPDoor(g.Auth, g.log)
	root := guard(g.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.operations(w, r, true) {
			return
		}
		if err := g.fenced(); err != nil {
			w.Header().Set("Retry-After", "5")
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if isMCPPath(r.URL.Path) {
			door.ServeHTTP(w, r)
			return
		}
		if ui.Claims(r.URL.Path) {
			g.UI.ServeHTTP(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/_nas/") {
			g.API.ServeHTTP(w, r)
			return
		}
		if sts.IsSTS(r) {
			g.STS.ServeHTTP(w, r)
			return
		}
		g.S3.ServeHTTP(w, r)
	})), g.bodies)
	door.root = root
	return &rootHandler{Handler: root, mcp: door}
}

// rootHandler is the handler Handler returns. Serve ends its MCP
// sessions when it shuts down: their standing event streams would
// otherwise hold the drain until its timeout.
type rootHandler struct {
	http.Handler
	mcp *mcpDoor
}

// ServeOptions configures Serve.
type ServeOptions struct {
	Addr    string
	TLSCert string
	TLSKey  string
	// KeyPair, if set, is the TLS certificate to serve (TLSCert and TLSKey
	// are then ignored); its Reload changes it while serving.
	KeyPair  *KeyPair
	Insecure bool // allow plain HTTP on a non-loopback address
	// ShutdownTimeout bounds how long in-flight requests may take to
	// finish once ctx ends (DefaultShutdownTimeout when zero).
	ShutdownTimeout time.Duration
	// Ready, if set, is called with the bound address once listening.
	Ready func(addr net.Addr)
}

// DefaultMemoryLimit is the Go runtime's soft memory limit `nas serve`
// sets by default (--memory-limit): 1 GiB, above the store's ceiling
// (kv.BadgerSizing.Ceiling, 500 MiB by default, a worst case: 8 clients
// of 4 KiB PUTs held about 220 MiB in all) plus the large bodies
// being ingested (s3api: 8 of up to 25 MiB), so the collector only works
// harder when the heap nears what a loaded gateway needs instead of
// letting it double (GOGC=100) past it. 512 MiB kept 8 clients of 64 MiB
// multipart uploads below MinIO's resident set, but is below those
// ceilings' sum (bench/RESULTS.md, "Memory under load").
const DefaultMemoryLimit = 1 << 30

// DefaultGCPercent is the garbage collector's target `nas serve` sets by
// default (--gc-percent, GOGC): a collection when the heap has grown by
// half its live data rather than doubled. The store's table builders
// come and go with every compaction, so under 8 clients of 4 KiB PUT/GET
// the heap's sawtooth was much of the resident set's peaks; at 50 their
// private part fell from 237-270 to 176-185 MiB, and 8-client GETs of
// 64 MiB ran 6-7% slower (bench/RESULTS.md, "The 4 KiB soak's peaks").
const DefaultGCPercent = 50

// DefaultShutdownTimeout is how long Serve waits for in-flight requests
// when ServeOptions.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 30 * time.Second

// ErrInsecure is returned when asked to serve plain HTTP beyond loopback.
var ErrInsecure = errors.New("refusing to serve plain HTTP on a non-loopback address: give --tls-cert/--tls-key, or --insecure")

// IsLoopback reports whether addr's host is a loopback address.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves h until ctx ends, then shuts down gracefully: the
// listener closes at once (new connections are refused) and in-flight
// requests get ServeOptions.ShutdownTimeout to finish. Past it the
// remaining connections are closed and Serve returns an error.
func Serve(ctx context.Context, h http.Handler, o ServeOptions, log *slog.Logger) error {
	kp, err := keyPair(o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Connections that were opened but never sent a request count as busy
	// to Shutdown for five seconds; track them so shutdown can close them.
	fresh := &freshConns{conns: map[net.Conn]bool{}}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnState:         fresh.track,
	}
	if rh, ok := h.(*rootHandler); ok {
		srv.RegisterOnShutdown(rh.mcp.closeAll)
	}
	if kp != nil {
		srv.TLSConfig = &tls.Config{GetCertificate: kp.GetCertificate, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	if o.Ready != nil {
		o.Ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return drain(srv, fresh, o.ShutdownTimeout, log)
}

// keyPair checks the TLS options and returns the certificate to serve,
// nil for plain HTTP.
func keyPair(o ServeOptions) (*KeyPair, error) {
	if o.KeyPair != nil {
		return o.KeyPair, nil
	}
	useTLS := o.TLSCert != "" || o.TLSKey != ""
	if useTLS && (o.TLSCert == "" || o.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if !useTLS {
		if !o.Insecure && !IsLoopback(o.Addr) {
			return nil, ErrInsecure
		}
		return nil, nil
	}
	return LoadKeyPair(o.TLSCert, o.TLSKey)
}

// drain shuts srv down, waiting up to timeout for in-flight requests.
func drain(srv *http.Server, fresh *freshConns, timeout time.Duration, log *slog.Logger) error {
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	log.Info("shutting down: refusing new connections, draining requests in flight", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	go func() {
		// Shutdown stops the listener first; then no connection turns new.
		time.Sleep(50 * time.Millisecond)
		fresh.closeAll()
	}()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // what did not finish in time is cut off
		return fmt.Errorf("shutdown: requests still running after %v: %w", timeout, err)
	}
	log.Info("shut down: every request finished")
	return nil
}

// freshConns tracks connections that have not sent a request yet.
type freshConns struct {
	mu    sync.Mutex // guards conns
	conns map[net.Conn]bool
}

// track is the http.Server's ConnState hook.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == http.StateNew {
		f.conns[c] = true
	} else {
		delete(f.conns, c)
	}
}

// closeAll closes every connection that never sent a request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.Close()
	}
}

// commitChanges lists what a commit changed against its first parent, for
// the webhooks' object events.
func (g *Gateway) commitChanges(ctx context.Context, repo, commit, after string, fn func(hook.ObjectChange) error) error {
	id, err := manifest.ParseCommitID(commit)
	if err != nil {
		return fmt.Errorf("commit %q: %w", commit, err)
	}
	c, err := g.Branches.Manifest().GetCommit(ctx, id)
	if errors.Is(err, manifest.ErrNotFound) {
		return hook.ErrNotYet
	}
	if err != nil {
		return err
	}
	if len(c.Parents) == 0 {
		return nil
	}
	return g.Branches.Diff(ctx, repo, c.Parents[0].String(), commit, after, nil, func(ch branch.Change) error {
		oc := hook.ObjectChange{Key: ch.Key, Removed: ch.New == nil}
		if e := ch.New; e != nil {
			oc.Size, oc.ETag, oc.VersionID = e.Size, e.ETag, e.VersionID
		}
		return fn(oc)
	})
}
