package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/agentnas/nas/gateway"
)

// profileHandler serves Go's runtime profiles under /debug/pprof/ (CPU,
// heap, goroutines, blocking, mutexes, traces), on a mux of its own so
// they never reach the gateway's handler.
func profileHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serveProfiles serves profileHandler on addr (a loopback address,
// checked by the caller) until ctx ends.
func serveProfiles(ctx context.Context, addr string, log *slog.Logger) {
	err := gateway.Serve(ctx, profileHandler(), gateway.ServeOptions{Addr: addr,
		Ready: func(a net.Addr) {
			log.Info("serving Go profiles", "url", "http://"+a.String()+"/debug/pprof/")
		}}, log)
	if err != nil {
		log.Error("profile listener", "addr", addr, "err", err)
	}
}
