package nastest

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// TestStartWaitsForABusyAddress holds a fixed address, as an outgoing
// connection or another listener can right after a gateway closed it,
// and frees it 300 ms later: Start serves there instead of failing.
func TestStartWaitsForABusyAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln.Close()
	}()
	srv := Start(t, Options{Addr: addr, Gateways: 1})
	if srv.Addr != addr {
		t.Fatalf("serving on %s, want %s", srv.Addr, addr)
	}
	res, err := http.Get(srv.Endpoint + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
}
