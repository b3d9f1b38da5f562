package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
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
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/s3api"
	"github.com/agentnas/nas/source"
	"github.com/agentnas/nas/sts"
)

// Config configures a Gateway.
type Config struct {
	DataDir string
	Owner   s3api.Credentials
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
}

// Gateway is an opened data directory with its handlers.
type Gateway struct {
	DB        *kv.Badger
	Chunks    *cas.Store
	Branches  *branch.Service
	Leases    *auth.Leases
	Recorder  *record.Recorder
	Manifests *record.Manifests
	S3        *s3api.Server
	API       *api.Handler
	STS       *sts.Handler
	Gates     *gate.Service
	Sources   *source.Registry
	log       *slog.Logger

	authMu     sync.Mutex // guards authSecond and authCount
	authSecond int64
	authCount  int

	stop context.CancelFunc // ends background work started by Start
	bg   sync.WaitGroup     // background goroutines
}

// Open opens (creating if needed) the data directory.
func Open(c Config) (*Gateway, error) {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	db, err := kv.OpenBadger(filepath.Join(c.DataDir, "kv"), kv.BadgerOptions{Logger: c.Log})
	if err != nil {
		return nil, err
	}
	var kdb kv.DB = db
	if c.WrapDB != nil {
		kdb = c.WrapDB(db)
	}
	chunks, err := cas.Open(filepath.Join(c.DataDir, "chunks"), kdb, cas.Options{Log: c.Log, OnSync: c.OnSync})
	if err != nil {
		db.Close()
		return nil, err
	}
	b := branch.New(kdb, chunks, c.Log)
	leases, err := auth.OpenLeases(context.Background(), kdb)
	if err != nil {
		db.Close()
		return nil, err
	}
	g := &Gateway{DB: db, Chunks: chunks, Branches: b, Leases: leases, log: c.Log,
		Recorder: record.New(kdb, record.Options{}), Manifests: record.NewManifests(kdb, record.ManifestOptions{})}
	so := c.Sources
	if so.Log == nil {
		so.Log = c.Log
	}
	so.OnCommit = g.recordSourceCommit
	g.Sources = source.New(kdb, b, so)
	b.AddRoots(g.Sources.Materializer()) // the side index is a GC root
	g.S3 = s3api.New(s3api.Config{Branches: b, Owner: c.Owner, Region: c.Region, Domains: c.Domains, Log: c.Log, Leases: leases,
		OnDeny: g.recordDenial, OnRead: g.recordRead, OnGrantUsed: g.recordGrantUsed, OnDelete: g.recordDelete,
		OnAuthFailure: g.recordAuthFailure, Lazy: g.Sources.Materializer()})
	g.Gates = gate.New(b, kdb, leases, g.Recorder)
	g.API = api.New(api.Config{Branches: b, Leases: leases, Recorder: g.Recorder, FlushReads: g.Manifests.Flush,
		OnRead: g.recordRead, OnDeny: g.recordDenial, Gates: g.Gates, Auth: g.S3, Log: c.Log})
	g.API.SetSources(g.Sources)
	g.STS = sts.New(g.S3, leases, b, g.Recorder, c.Log)
	g.STS.ErrorMapper = s3api.ErrorFor
	return g, nil
}

// recordSourceCommit writes the commit an attach or refresh is about to
// make to the flight recorder, before the branch moves.
func (g *Gateway) recordSourceCommit(ctx context.Context, repo, br string, id manifest.CommitID, message, principal string) error {
	e := record.Event{Kind: record.KindCommit, Principal: principal, Repo: repo, Branch: br,
		Subject: record.Subject{Commit: id.String()}, Details: map[string]string{"detail": message}}
	_, err := g.Recorder.Append(ctx, e)
	return err
}

// provenance fills an event's run, lease and principal from l.
func provenance(e *record.Event, l *lease.Lease) {
	if l == nil {
		return
	}
	e.Run, e.Principal, e.OnBehalfOf, e.Lease, e.Purpose = l.Run, l.Principal, l.OnBehalfOf, l.ID, l.Purpose
}

// recordDenial writes a refused lease request to the flight recorder.
func (g *Gateway) recordDenial(ctx context.Context, l *lease.Lease, action, repo, branch, key string, v lease.Verdict) {
	e := record.Event{Kind: record.KindDenied, Repo: repo, Branch: branch, Subject: record.Subject{Path: key},
		Decision: record.Decision{Effect: record.Effect(v.Decision.String()), Rule: v.Rule}, Details: map[string]string{"action": action}}
	provenance(&e, l)
	if _, err := g.Recorder.Append(context.WithoutCancel(ctx), e); err != nil {
		g.log.Error("flight recorder: denial not recorded", "lease", l.ID, "err", err)
	}
}

// authFailures bounds how many refused unauthenticated requests are
// recorded per second, so a flood cannot bury the record.
const authFailuresPerSecond = 20

// recordAuthFailure records a request refused before it had a principal:
// who it claimed to be (the access key, if any) and why.
func (g *Gateway) recordAuthFailure(ctx context.Context, r *http.Request, err error) {
	g.authMu.Lock()
	now := time.Now().Unix()
	if now != g.authSecond {
		g.authSecond, g.authCount = now, 0
	}
	g.authCount++
	over := g.authCount > authFailuresPerSecond
	g.authMu.Unlock()
	if over {
		return
	}
	_, code, _ := s3api.ErrorFor(err)
	e := record.Event{Kind: record.KindDenied, Principal: claimedKey(r), Subject: record.Subject{Path: r.URL.EscapedPath()},
		Decision: record.Decision{Effect: record.EffectDeny, Rule: "authentication", Reason: code},
		Details:  map[string]string{"method": r.Method, "remote": r.RemoteAddr}}
	if _, err := g.Recorder.Append(context.WithoutCancel(ctx), e); err != nil {
		g.log.Error("flight recorder: refusal not recorded", "err", err)
	}
}

// claimedKey returns the access key a request claims, or "anonymous".
func claimedKey(r *http.Request) string {
	if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		ak, _, _ := strings.Cut(c, "/")
		return ak
	}
	if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		ak, _, _ := strings.Cut(rest, "/")
		return ak
	}
	return "anonymous"
}

// recordRead adds a lease's read to its run's read manifest: the path, the
// branch head it was read at, the version, range and ETag (never content).
func (g *Gateway) recordRead(ctx context.Context, l *lease.Lease, repo, br, key string, e *manifest.Entry, off, n int64) {
	rd := record.Read{Path: key, VersionID: e.VersionID, Offset: off, Length: n, ETag: e.ETag}
	if b, err := g.Branches.GetBranch(ctx, repo, br); err == nil {
		rd.Commit = b.Head.String()
	}
	if err := g.Manifests.Add(context.WithoutCancel(ctx), l.Run, rd); err != nil {
		g.log.Error("read manifest", "run", l.Run, "err", err)
	}
}

func (g *Gateway) recordGrantUsed(ctx context.Context, l *lease.Lease, key string, used []lease.Grant) {
	for _, gr := range used {
		e := record.Event{Kind: record.KindShareUsed, Repo: l.Repo, Branch: l.Branch, Subject: record.Subject{Path: key},
			Details: map[string]string{"grant": gr.ID}}
		provenance(&e, l)
		if _, err := g.Recorder.Append(context.WithoutCancel(ctx), e); err != nil {
			g.log.Error("flight recorder: grant use not recorded", "err", err)
		}
	}
}

// recordDelete writes a delete's intent record before the delete happens.
func (g *Gateway) recordDelete(ctx context.Context, l *lease.Lease, actor, repo, br, key, vid string) error {
	e := record.Event{Kind: record.KindDelete, Principal: actor, Repo: repo, Branch: br, Subject: record.Subject{Path: key, VersionID: vid}}
	provenance(&e, l)
	_, err := g.Recorder.Append(ctx, e)
	return err
}

// Start begins the gateway's background work (usage write-behind, kv
// maintenance); Close stops it.
func (g *Gateway) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	g.stop = cancel
	runManifests := func(ctx context.Context) { _ = g.Manifests.Run(ctx) }
	for _, run := range []func(context.Context){g.DB.Run, g.Leases.Run, runManifests, g.Sources.Run, g.runExpiry} {
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
	if err := g.Manifests.Close(); err != nil {
		g.log.Error("closing read manifests", "err", err)
	}
	g.Chunks.Close()
	return g.DB.Close()
}

// Handler returns the HTTP handler: the control API under /_nas/ and S3
// for everything else. It deliberately is not an http.ServeMux, which would
// clean paths and so rewrite object keys.
func (g *Gateway) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_nas/") {
			g.API.ServeHTTP(w, r)
			return
		}
		if sts.IsSTS(r) {
			g.STS.ServeHTTP(w, r)
			return
		}
		g.S3.ServeHTTP(w, r)
	})
}

// ServeOptions configures Serve.
type ServeOptions struct {
	Addr     string
	TLSCert  string
	TLSKey   string
	Insecure bool // allow plain HTTP on a non-loopback address
	// Ready, if set, is called with the bound address once listening.
	Ready func(addr net.Addr)
}

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

// Serve serves h until ctx ends, then shuts down gracefully: in-flight
// requests get up to 30 seconds to finish.
func Serve(ctx context.Context, h http.Handler, o ServeOptions, log *slog.Logger) error {
	useTLS := o.TLSCert != "" || o.TLSKey != ""
	if useTLS && (o.TLSCert == "" || o.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if !useTLS && !o.Insecure && !IsLoopback(o.Addr) {
		return ErrInsecure
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Connections that were opened but never sent a request count as busy
	// to Shutdown for five seconds; track them so shutdown can close them.
	var mu sync.Mutex // guards fresh
	fresh := map[net.Conn]bool{}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnState: func(c net.Conn, st http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			if st == http.StateNew {
				fresh[c] = true
			} else {
				delete(fresh, c)
			}
		},
	}
	if useTLS {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
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
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		// Shutdown stops the listener first; then no connection turns new.
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		for c := range fresh {
			c.Close()
		}
		mu.Unlock()
	}()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
