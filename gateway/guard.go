package gateway

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// Request bodies are guarded against clients that hold a connection by
// sending slowly: a body that stalls (no byte for Stall) or trickles
// (less than MinBytes for every Window the gateway spent waiting for it) is cut off with a timeout error, which the edges answer as
// RequestTimeout. Only the time spent waiting for the client counts, so
// a handler that pauses between reads is never mistaken for a slow
// client.
//
// A request refused by the door before its body was read (401/403: a bad
// signature, dead credentials, a denied write) is answered with
// Connection: close and its connection's read deadline expired, so the
// server does not drain the body of a client it has already refused. Any
// other error answered early lets the server drain what it drains (at
// most 256 KiB, to keep the connection), within the stall limit.

// BodyLimits bound how slowly a client may send a request body. Zero
// fields take the defaults: 30 s stall, at least 32 KiB per 30 s waited.
type BodyLimits struct {
	Stall    time.Duration
	Window   time.Duration
	MinBytes int64
}

func (l BodyLimits) withDefaults() BodyLimits {
	if l.Stall <= 0 {
		l.Stall = 30 * time.Second
	}
	if l.Window <= 0 {
		l.Window = 30 * time.Second
	}
	if l.MinBytes <= 0 {
		l.MinBytes = 32 << 10
	}
	return l
}

// errSlowBody is the error a guarded body returns; it is a net.Error
// timeout, which is how the edges recognise it.
type slowBodyError struct{ reason string }

func (e slowBodyError) Error() string {
	return "the request body " + e.reason + "; the gateway stopped reading it"
}

// Timeout reports true: the edges answer RequestTimeout.
func (slowBodyError) Timeout() bool { return true }

// Temporary reports false.
func (slowBodyError) Temporary() bool { return false }

// guardedBody is a request body read under the rules above.
type guardedBody struct {
	lim    BodyLimits
	r      io.ReadCloser
	rc     *http.ResponseController
	waited time.Duration // time spent blocked in Read in this window
	got    int64         // bytes read in this window
	eof    bool          // the body was read to its end
	err    error         // sticky: once cut off, always cut off
	closed atomic.Bool   // the handler closed it (see Close)
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.err != nil {
		return 0, b.err
	}
	start := time.Now()
	_ = b.rc.SetReadDeadline(start.Add(b.lim.Stall))
	n, err := b.r.Read(p)
	b.waited += time.Since(start)
	b.got += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
	case isTimeout(err):
		b.err = slowBodyError{"stalled (nothing arrived for " + b.lim.Stall.String() + ")"}
		return n, b.err
	}
	if b.waited >= b.lim.Window {
		if b.got < b.lim.MinBytes {
			b.err = slowBodyError{fmt.Sprintf("trickled (%d bytes in %s, less than %d)", b.got, b.waited.Round(time.Millisecond), b.lim.MinBytes)}
			return n, b.err
		}
		b.waited, b.got = 0, 0
	}
	return n, err
}

// Close leaves the server's body to the server, which closes it once the
// answer is out. Closed first by a handler, it would drain up to 256 KiB
// before the answer is written: a client that waits for 100 Continue
// sends nothing meanwhile, so both would wait until the client gives up
// waiting and sends the body it was about to be refused. Reads after
// Close fail.
func (b *guardedBody) Close() error {
	b.closed.Store(true)
	return nil
}

func isTimeout(err error) bool {
	t, ok := err.(interface{ Timeout() bool })
	return ok && t.Timeout()
}

// guardedWriter closes the connection instead of draining an unread body
// after a refusal.
type guardedWriter struct {
	http.ResponseWriter
	req   *http.Request
	orig  io.ReadCloser // the server's own body
	body  *guardedBody
	wrote bool // the status was written
	close bool // a refusal was answered before the body was read
}

func (w *guardedWriter) WriteHeader(status int) {
	if w.wrote {
		w.ResponseWriter.WriteHeader(status)
		return
	}
	w.wrote = true
	if (status == http.StatusUnauthorized || status == http.StatusForbidden) && !w.body.eof {
		w.Header().Set("Connection", "close")
		w.close = true
	}
	// The server decides how to finish an unread body (drain up to 256 KiB
	// and keep the connection, or close it after a pause that lets the
	// client read the answer) by the body's own type: hand it back.
	w.req.Body = w.orig
	w.ResponseWriter.WriteHeader(status)
}

func (w *guardedWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *guardedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through (streamed answers).
func (w *guardedWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// guard wraps h with the body rules.
func guard(h http.Handler, lim BodyLimits) http.Handler {
	lim = lim.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		orig := r.Body
		b := &guardedBody{lim: lim, r: orig, rc: rc}
		if orig == nil || orig == http.NoBody {
			b.r, b.eof = http.NoBody, true
		}
		r.Body = b
		gw := &guardedWriter{ResponseWriter: w, req: r, orig: orig, body: b}
		h.ServeHTTP(gw, r)
		switch {
		case gw.close:
			// The server would read up to 256 KiB of the body before closing;
			// an expired deadline makes that read end at once.
			_ = rc.SetReadDeadline(time.Now())
		case !b.eof:
			// What the server drains of an unread body arrives in time.
			_ = rc.SetReadDeadline(time.Now().Add(lim.Stall))
		default:
			_ = rc.SetReadDeadline(time.Time{})
		}
	})
}
