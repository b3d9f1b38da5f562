package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gateway"
)

// serveOptions are the flags of `nas serve`.
type serveOptions struct {
	addr, data      string
	tlsCert, tlsKey string
	insecure        bool
	region          string
	domains         []string
	logLevel        string
	gcInterval      time.Duration
	retention       time.Duration
	metricsAddr     string
}

// newServeCmd builds `nas serve`.
func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (S3 and control API on one port)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:9000", "listen address")
	f.StringVar(&o.data, "data", "./nas-data", "data directory")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM)")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM)")
	f.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP on a non-loopback address")
	f.StringVar(&o.region, "region", "us-east-1", "region reported to S3 clients (any region is accepted in signatures)")
	f.StringSliceVar(&o.domains, "domain", []string{"localhost"}, "domain for virtual-host style requests (BUCKET.DOMAIN)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.DurationVar(&o.gcInterval, "gc-interval", 6*time.Hour, "run garbage collection this often (0 disables; `nas gc` runs it on demand)")
	f.DurationVar(&o.retention, "retention", branch.DefaultRetention, "keep history (commits and versions) younger than this")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "also serve /_nas/metrics and the health endpoints, without authentication, on this address (bind it to a private interface)")
	return cmd
}

// runServe opens the data directory and serves S3 and the control API
// until ctx ends, collecting garbage every --gc-interval.
func runServe(ctx context.Context, o serveOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usagef("--log-level: %v", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if !o.insecure && o.tlsCert == "" && !gateway.IsLoopback(o.addr) {
		return gateway.ErrInsecure
	}
	owner, generated, err := gateway.OwnerCredentials(o.data, os.Getenv)
	if err != nil {
		return err
	}
	g, err := gateway.Open(gateway.Config{DataDir: o.data, Owner: owner, Region: o.region, Domains: o.domains, Log: log})
	if err != nil {
		return err
	}
	defer g.Close()
	g.Start()
	if o.gcInterval > 0 {
		go collectEvery(ctx, g, o, log)
	}
	if o.metricsAddr != "" {
		go serveMetrics(ctx, g, o.metricsAddr, log)
	}
	handler := g.Handler()
	scheme := "http"
	if o.tlsCert != "" {
		scheme = "https"
	}
	return gateway.Serve(ctx, handler, gateway.ServeOptions{
		Addr: o.addr, TLSCert: o.tlsCert, TLSKey: o.tlsKey, Insecure: o.insecure,
		Ready: func(addr net.Addr) {
			endpoint := fmt.Sprintf("%s://%s", scheme, addr)
			fmt.Fprintf(os.Stderr, "nas: serving S3 and the control API on %s (data in %s)\n", endpoint, o.data)
			if generated {
				fmt.Fprintf(os.Stderr, "nas: generated owner credentials (stored in %s/credentials, shown once):\n", strings.TrimSuffix(o.data, "/"))
				fmt.Fprintf(os.Stderr, "  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_ENDPOINT_URL=%s\n", owner.AccessKey, owner.SecretKey, endpoint)
			}
		},
	}, log)
}

// serveMetrics serves the metrics and health endpoints on addr, without
// authentication and in plain HTTP (they reveal nothing about data),
// until ctx ends.
func serveMetrics(ctx context.Context, g *gateway.Gateway, addr string, log *slog.Logger) {
	err := gateway.Serve(ctx, g.MetricsHandler(), gateway.ServeOptions{Addr: addr, Insecure: true,
		Ready: func(a net.Addr) {
			fmt.Fprintf(os.Stderr, "nas: serving metrics on http://%s%s\n", a, gateway.MetricsPath)
		}}, log)
	if err != nil {
		log.Error("metrics listener", "addr", addr, "err", err)
	}
}

// collectEvery runs garbage collection periodically until ctx ends.
func collectEvery(ctx context.Context, g *gateway.Gateway, o serveOptions, log *slog.Logger) {
	t := time.NewTicker(o.gcInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := g.Branches.Collect(ctx, branch.GCOptions{Retention: o.retention})
		if err != nil {
			log.Error("garbage collection", "err", err)
			continue
		}
		log.Info("garbage collection", "chunks", st.Chunks.Chunks, "bytes", st.Chunks.Bytes+st.Chunks.SegmentBytes,
			"nodes", st.Nodes, "expired_commits", st.ExpiredCommits, "expired_versions", st.Versions, "uploads", st.Uploads)
	}
}
