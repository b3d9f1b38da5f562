package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/johannesboyne/gofakes3"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/bytesize"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv"
)

// childMemory is the memory configuration of `nas serve` for a child:
// the store's budget (NAS_KV_MEMORY, default kv.DefaultBadgerMemory), the
// runtime's soft limit (NAS_MEMORY_LIMIT, default
// gateway.DefaultMemoryLimit unless GOMEMLIMIT is set) and its collection
// target (NAS_GC_PERCENT, default gateway.DefaultGCPercent unless GOGC is
// set), read from the environment as nas serve reads them, so a soak can
// measure other sizes.
func childMemory(getenv func(string) string) (kv.BadgerSizing, error) {
	size := func(name string, def int64) (int64, error) {
		v := getenv(name)
		if v == "" {
			return def, nil
		}
		n, err := bytesize.Parse(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return n, nil
	}
	budget, err := size("NAS_KV_MEMORY", kv.DefaultBadgerMemory)
	if err != nil {
		return kv.BadgerSizing{}, err
	}
	var limit int64
	if getenv("GOMEMLIMIT") == "" || getenv("NAS_MEMORY_LIMIT") != "" {
		if limit, err = size("NAS_MEMORY_LIMIT", gateway.DefaultMemoryLimit); err != nil {
			return kv.BadgerSizing{}, err
		}
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	if v := getenv("NAS_GC_PERCENT"); v != "" || getenv("GOGC") == "" {
		pct := gateway.DefaultGCPercent
		if v != "" {
			if pct, err = strconv.Atoi(v); err != nil || pct < 1 {
				return kv.BadgerSizing{}, fmt.Errorf("NAS_GC_PERCENT %q: want a whole number from 1", v)
			}
		}
		debug.SetGCPercent(pct)
	}
	return kv.BadgerSizingFor(budget)
}

// serveChildProfiles serves Go's profiles of a child on addr (from
// NAS_PPROF_ADDR, as nas serve's --pprof-addr) until ctx ends, so a soak's
// server can be profiled.
func serveChildProfiles(ctx context.Context, addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	_ = gateway.Serve(ctx, mux, gateway.ServeOptions{Addr: addr}, log)
}

// ServeChild is the body of a server process the memory workload spawns
// (see Spawner): it serves kind (KindNAS or KindGoFakeS3) on dataDir at
// addr with BenchCredentials until ctx ends. It is the same gateway
// assembly as `nas serve`, without the garbage-collection timer.
func ServeChild(ctx context.Context, kind, dataDir, addr string) error {
	log := slog.New(slog.DiscardHandler)
	switch kind {
	case KindNAS:
		sz, err := childMemory(os.Getenv)
		if err != nil {
			return err
		}
		g, err := gateway.Open(gateway.Config{DataDir: dataDir, Owner: auth.Owner{AccessKey: benchAccessKey, SecretKey: benchSecretKey}, Log: log, KV: sz})
		if err != nil {
			return fmt.Errorf("open gateway: %w", err)
		}
		defer g.Close()
		g.Start()
		if a := os.Getenv("NAS_PPROF_ADDR"); a != "" {
			go serveChildProfiles(ctx, a, log)
		}
		return gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{Addr: addr}, log)
	case KindGoFakeS3:
		be, err := NewGoFakeS3Backend(dataDir)
		if err != nil {
			return err
		}
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		srv := &http.Server{Handler: gofakes3.New(be).Server(), ReadHeaderTimeout: 30 * time.Second}
		go func() {
			<-ctx.Done()
			_ = srv.Close()
		}()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	return fmt.Errorf("bench: cannot serve %q in a child process", kind)
}
