package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/metrics"
)

// The operations endpoints. Health answers without authentication and
// says nothing but its status; metrics on the main listener are the
// owner's (MetricsHandler serves them without authentication on a
// listener of their own).
const (
	LivePath    = "/_nas/health/live"
	ReadyPath   = "/_nas/health/ready"
	MetricsPath = "/_nas/metrics"
)

// readyTimeout bounds a readiness check: a store slower than this is not
// ready.
const readyTimeout = 2 * time.Second

// operations serves the operations endpoints; it reports false for any
// other path.
func (g *Gateway) operations(w http.ResponseWriter, r *http.Request, ownerOnly bool) bool {
	e := access.From(r.Context())
	switch r.URL.Path {
	case LivePath:
		e.API, e.Operation = access.Health, "live"
		status(w, http.StatusOK)
	case ReadyPath:
		e.API, e.Operation = access.Health, "ready"
		if err := g.ready(r.Context()); err != nil {
			g.log.Warn("not ready", "err", err)
			status(w, http.StatusServiceUnavailable)
			return true
		}
		status(w, http.StatusOK)
	case MetricsPath:
		e.API, e.Operation = access.Metrics, "scrape"
		if ownerOnly && !g.owner(w, r) {
			return true
		}
		g.Metrics.Handler().ServeHTTP(w, r)
	default:
		return false
	}
	return true
}

// status answers code with its bare status text and nothing else.
func status(w http.ResponseWriter, code int) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if code == http.StatusOK {
		io.WriteString(w, "ok\n")
		return
	}
	io.WriteString(w, http.StatusText(code)+"\n")
}

// owner lets the owner's signed request through the door; anyone else
// gets a bare 403.
func (g *Gateway) owner(w http.ResponseWriter, r *http.Request) bool {
	p, err := g.Auth.Authenticate(r, auth.Control)
	if p != nil {
		access.From(r.Context()).Principal = p.Name()
		defer g.Auth.Finish(r.Context(), p)
		defer p.Signed.Body.Close()
	}
	if err == nil {
		err = g.Auth.OwnerOnly(r.Context(), p, "metrics", auth.Target{})
	}
	if err != nil {
		status(w, http.StatusForbidden)
		return false
	}
	return true
}

// ready checks, within readyTimeout, that a kv read and a chunk-store
// stat succeed. Probes that arrive while a check runs wait for that one
// and share its answer.
func (g *Gateway) ready(ctx context.Context) error {
	if err := g.fenced(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	ch := g.readiness.DoChan("ready", func() (any, error) { return nil, g.checkStores() })
	select {
	case r := <-ch:
		return r.Err
	case <-ctx.Done():
		return ctx.Err() // the store is slow: not ready (the check goes on, alone)
	}
}

// checkStores reads kv and stats the chunk store, giving up after
// readyTimeout if they honour their context (a hung one may not).
func (g *Gateway) checkStores() error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	err := g.kv.View(ctx, func(r kv.Reader) error {
		_, err := r.Get([]byte("_nas/ready-probe")) // any key: a miss is a read that worked
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	})
	if err == nil {
		err = g.Chunks.Ping(ctx)
	}
	return err
}

// MetricsHandler serves the metrics and health endpoints without
// authentication, for a listener of their own (nas serve
// --metrics-addr), which operators bind to a private interface.
func (g *Gateway) MetricsHandler() http.Handler {
	return g.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.operations(w, r, false) {
			status(w, http.StatusNotFound)
		}
	}))
}

// observe wraps h with the access log and the request metrics: h's edge
// fills in the request's access.Entry, observe measures the rest.
func (g *Gateway) observe(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		e := &access.Entry{}
		r = r.WithContext(access.With(r.Context(), e))
		body := &countingBody{r: r.Body}
		if r.Body != nil {
			r.Body = body
		}
		cw := &countingWriter{ResponseWriter: w}
		finished := false
		defer func() { g.logRequest(r, e, cw, body.n, time.Since(start), !finished) }()
		h.ServeHTTP(cw, r)
		finished = true
	})
}

// logRequest writes the access-log line and counts the request. The
// path is logged without its query, which may carry a presigned URL's
// signature and session token.
func (g *Gateway) logRequest(r *http.Request, e *access.Entry, w *countingWriter, in int64, d time.Duration, aborted bool) {
	code := w.code
	if code == 0 {
		code = http.StatusOK
	}
	if e.API == "" {
		e.API = access.S3
	}
	g.Metrics.ObserveRequest(metrics.Request{API: e.API, Operation: e.Operation, Status: code, Received: in, Sent: w.n, Duration: d})
	level := slog.LevelInfo
	if e.API == access.Health || e.API == access.Metrics {
		level = slog.LevelDebug // probes and scrapes every few seconds
	}
	g.log.LogAttrs(r.Context(), level, "access",
		slog.String("method", r.Method), slog.String("api", e.API), slog.String("operation", e.Operation),
		slog.String("path", r.URL.EscapedPath()), slog.String("repo", e.Repo), slog.String("branch", e.Branch),
		slog.Int("status", code), slog.Int64("bytes_in", in), slog.Int64("bytes_out", w.n),
		slog.Duration("duration", d), slog.String("request_id", e.RequestID), slog.String("principal", e.Principal),
		slog.String("remote", r.RemoteAddr), slog.Bool("aborted", aborted))
}

// countingBody counts the request body bytes the handler read.
type countingBody struct {
	r io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

func (b *countingBody) Close() error { return b.r.Close() }

// countingWriter records the status and counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	code int
	n    int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through (streamed answers).
func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
