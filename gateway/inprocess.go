package gateway

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
)

// inProcess is an http.RoundTripper that hands a request to the
// gateway's own root handler in this process, with no network hop: the
// MCP tools' client signs its requests as any client does and they pass
// the same door, guards, access log and metrics. The response body
// streams through an io.Pipe, so nothing is buffered beyond one Write;
// closing it (or canceling the request) ends the handler's writes.
//
// It is safe for concurrent use: every request runs in its own
// goroutine.
type inProcess struct {
	h      http.Handler
	remote string // RemoteAddr of the requests: the MCP client's, for the access log
	log    *slog.Logger
}

var _ http.RoundTripper = (*inProcess)(nil)

// RoundTrip implements http.RoundTripper.
func (t *inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	sr := req.Clone(ctx)
	sr.RequestURI = req.URL.RequestURI()
	if sr.Host == "" {
		sr.Host = req.URL.Host
	}
	sr.RemoteAddr = t.remote
	sr.Proto, sr.ProtoMajor, sr.ProtoMinor = "HTTP/1.1", 1, 1
	sr.URL.Scheme, sr.URL.Host = "", "" // as a server sees a request line
	if sr.Body == nil {
		sr.Body = http.NoBody
	}
	w := newPipeWriter()
	go t.serve(w, sr, req.Body)
	select {
	case <-w.ready:
	case <-ctx.Done():
		w.pr.CloseWithError(ctx.Err()) // the handler's writes fail and it ends
		return nil, ctx.Err()
	}
	resp := &http.Response{Status: fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.sent, Body: w.pr, ContentLength: -1, Request: req}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead {
		resp.Body = http.NoBody
		w.pr.Close()
	}
	return resp, nil
}

// serve runs the handler and ends the response; a panic is answered with
// 500 (or cuts a response already begun) instead of ending the process,
// as net/http's server would. The request body is closed, as a
// RoundTripper must.
func (t *inProcess) serve(w *pipeWriter, r *http.Request, body io.ReadCloser) {
	defer func() {
		if body != nil {
			body.Close()
		}
		if v := recover(); v != nil {
			t.log.Error("in-process request panicked", "path", r.URL.EscapedPath(), "panic", v)
			w.WriteHeader(http.StatusInternalServerError)
			w.pw.CloseWithError(fmt.Errorf("gateway: the handler panicked"))
			return
		}
		w.WriteHeader(http.StatusOK) // a handler that wrote nothing answered 200
		w.pw.Close()
	}()
	t.h.ServeHTTP(w, r)
}

// pipeWriter is the http.ResponseWriter of an in-process request: the
// status and a snapshot of the headers when it is written, then the
// body through a pipe.
type pipeWriter struct {
	header http.Header
	pr     *io.PipeReader
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{} // closed once status and sent are set
	status int
	sent   http.Header
}

func newPipeWriter() *pipeWriter {
	pr, pw := io.Pipe()
	return &pipeWriter{header: http.Header{}, pr: pr, pw: pw, ready: make(chan struct{})}
}

// Header implements http.ResponseWriter.
func (w *pipeWriter) Header() http.Header { return w.header }

// WriteHeader implements http.ResponseWriter; informational statuses
// are dropped, later calls ignored, as a server does.
func (w *pipeWriter) WriteHeader(code int) {
	if code < 200 {
		return
	}
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

// Write implements http.ResponseWriter: it blocks until the client
// reads, and fails once the client closed the body.
func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush implements http.Flusher: a pipe holds nothing back, so every
// Write is already with the reader.
func (w *pipeWriter) Flush() { w.WriteHeader(http.StatusOK) }

// inProcessClient is an http.Client over t; redirects are not followed
// (the gateway sends none to its own clients).
func inProcessClient(t *inProcess) *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
