package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/agentnas/nas/gateway"
)

// blocking is a handler that announces each request and answers it once
// release is closed.
func blocking(entered chan<- struct{}, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		io.WriteString(w, "finished")
	})
}

// serveAsync runs Serve on 127.0.0.1:0 and returns its address and result.
func serveAsync(ctx context.Context, h http.Handler, timeout time.Duration) (string, <-chan error) {
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- gateway.Serve(ctx, h, gateway.ServeOptions{Addr: "127.0.0.1:0", ShutdownTimeout: timeout,
			Ready: func(a net.Addr) { ready <- a }}, discard())
	}()
	return (<-ready).String(), done
}

// TestServeDrainsInFlightRequests: once ctx ends, new connections are
// refused, the request in flight still completes, and Serve returns nil.
func TestServeDrainsInFlightRequests(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := serveAsync(ctx, blocking(entered, release), 10*time.Second)
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	<-entered
	cancel()
	refused := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !refused; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			refused = true
		} else {
			c.Close()
		}
	}
	if !refused {
		t.Fatal("new connections still accepted after shutdown began")
	}
	close(release)
	if got := <-answer; got != "finished" {
		t.Fatalf("request in flight during shutdown: %q", got)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve after a clean drain: %v", err)
	}
}

// TestServeShutdownDeadline: a request that outlives ShutdownTimeout is
// cut off and Serve says so.
func TestServeShutdownDeadline(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	addr, done := serveAsync(ctx, blocking(entered, release), 100*time.Millisecond)
	go http.Get("http://" + addr + "/stuck")
	<-entered
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Serve returned nil with a request still running past the deadline")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not give up at its shutdown deadline")
	}
}
