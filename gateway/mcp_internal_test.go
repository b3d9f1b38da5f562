package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/sigv4"
)

func TestMCPRefusalTable(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: no bearer token", sigv4.ErrMissingAuth), 401, "Unauthenticated"},
		{fmt.Errorf("%w: scheme", auth.ErrBadBearer), 401, "Unauthenticated"},
		{fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, lease.ErrBadToken), 401, "InvalidAccessKeyId"},
		{fmt.Errorf("%w: %w", sigv4.ErrUnknownKey, lease.ErrRevoked), 401, "InvalidAccessKeyId"},
		{fmt.Errorf("%w: %w", sigv4.ErrInvalidToken, lease.ErrExpired), 401, "ExpiredToken"},
		{fmt.Errorf("%w: %w: lease x revoked", sigv4.ErrInvalidToken, auth.ErrLeaseEnded), 401, "ExpiredToken"},
		{errors.New("kv: the disk is gone"), 503, "ServiceUnavailable"},
	} {
		status, code := mcpRefusal(c.err)
		if status != c.status || code != c.code {
			t.Errorf("%v: %d %s, want %d %s", c.err, status, code, c.status, c.code)
		}
		if status == 401 && mcpHints[code] == "" {
			t.Errorf("%s has no hint", code)
		}
	}
}

// closeCounter is a request body that counts its Close.
type closeCounter struct {
	io.Reader
	closed chan struct{}
}

func (c *closeCounter) Close() error { close(c.closed); return nil }

func TestInProcessTransport(t *testing.T) {
	wrote := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Seen", r.Method+" "+r.Host+" "+r.RequestURI+" "+r.RemoteAddr+" "+r.URL.Host)
			w.WriteHeader(http.StatusCreated)
			w.Write(b)
		case "/stream":
			for i := range 1000 {
				fmt.Fprintf(w, "line %d\n", i)
				w.(http.Flusher).Flush()
			}
		case "/endless":
			w.WriteHeader(http.StatusOK)
			for {
				if _, err := w.Write([]byte("x")); err != nil {
					wrote <- err
					return
				}
			}
		case "/slow":
			<-r.Context().Done()
			_, err := w.Write([]byte("late"))
			wrote <- err
		case "/panic":
			panic("boom")
		}
	})
	c := inProcessClient(&inProcess{h: h, remote: "192.0.2.7:4711", log: slog.New(slog.DiscardHandler)})
	ctx := t.Context()

	body := &closeCounter{Reader: strings.NewReader("hello"), closed: make(chan struct{})}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://gw.test/echo?x=1", body)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || string(got) != "hello" || resp.Header.Get("X-Seen") != "PUT gw.test /echo?x=1 192.0.2.7:4711 " {
		t.Fatalf("echo: %d %q %q", resp.StatusCode, got, resp.Header.Get("X-Seen"))
	}
	select {
	case <-body.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the request body was not closed")
	}

	resp, err = c.Get("http://gw.test/stream")
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := strings.Count(string(got), "\n"); n != 1000 {
		t.Fatalf("streamed %d lines", n)
	}

	// Closing the body ends a handler that writes on.
	resp, err = c.Get("http://gw.test/endless")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 10))
	resp.Body.Close()
	if err := waitErr(t, wrote); err == nil {
		t.Fatal("the handler wrote on after the body was closed")
	}

	// A request canceled before the answer ends the handler's writes.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(cctx, http.MethodGet, "http://gw.test/slow", nil)
	if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("canceled request: %v", err)
	}
	if err := waitErr(t, wrote); err == nil {
		t.Fatal("the handler of a canceled request wrote")
	}

	resp, err = c.Get("http://gw.test/panic")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("a panic answered %d", resp.StatusCode)
	}
}

func waitErr(t *testing.T, c chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not end")
		return nil
	}
}

// TestMCPDoorClosesATokensSessions: the sessions of a token end when it
// is closed (a dead lease's next request) or when its lease expires.
func TestMCPDoorClosesATokensSessions(t *testing.T) {
	d := newMCPDoor(nil, slog.New(slog.DiscardHandler))
	open := func(h [32]byte, expires time.Time) (*mcp.Server, *mcp.ClientSession) {
		s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v0"}, nil)
		st, ct := mcp.NewInMemoryTransports()
		if _, err := s.Connect(t.Context(), st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		d.track(h, expires, s)
		return s, cs
	}
	revoked, expiring := [32]byte{1}, [32]byte{2}
	s1, c1 := open(revoked, time.Now().Add(time.Hour))
	s2, c2 := open(expiring, time.Now().Add(100*time.Millisecond))
	d.closeToken(revoked)
	waitClosed(t, "closed token", s1, c1)
	waitClosed(t, "expired lease", s2, c2)
	d.mu.Lock()
	left := len(d.open)
	d.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d tokens still tracked", left)
	}
}

func waitClosed(t *testing.T, name string, s *mcp.Server, cs *mcp.ClientSession) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the client session is still open", name)
	}
	// The server forgets a closed session once its connection ends.
	for deadline := time.Now().Add(5 * time.Second); !idle(s); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the server still has a session", name)
		}
	}
}
