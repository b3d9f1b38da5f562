package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/source"
)

// serveOptions are the flags of `nas serve`.
type serveOptions struct {
	config          string
	addr, data      string
	tlsCert, tlsKey string
	insecure        bool
	region          string
	domains         []string
	logLevel        string
	logFormat       string
	logFile         string
	gcInterval      time.Duration
	retention       time.Duration
	deletedKeep     time.Duration
	scratchTTL      time.Duration
	shutdownTimeout time.Duration
	metricsAddr     string
	keys            string
	adapters        string
	meta            string
	store           chunkFlags
	memory          memoryFlags
	pprofAddr       string
	publicURL       string
	checkCommands   string
}

// newServeCmd builds `nas serve`.
func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway (S3 and control API on one port)",
		Long: "Run the gateway (S3 and control API on one port). Every flag can also be set by the\n" +
			"environment variable NAS_<FLAG> (--log-format is NAS_LOG_FORMAT) or by the key of the\n" +
			"flag's name in the --config YAML file; the command line wins, then the environment.\n" +
			"SIGHUP reloads the TLS certificate; SIGTERM and SIGINT drain in-flight requests.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := resolveServeFlags(cmd.LocalFlags(), os.Getenv); err != nil {
				return err
			}
			given := func(name string) bool { return cmd.Flags().Changed(name) || os.Getenv(envName(name)) != "" }
			o.memory.limitSet, o.memory.gcSet = given("memory-limit"), given("gc-percent")
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "YAML file setting any of these flags by name")
	f.StringVar(&o.addr, "addr", "127.0.0.1:9000", "listen address")
	f.StringVar(&o.data, "data", "./nas-data", "data directory")
	f.StringVar(&o.meta, "meta", "", "metadata store: a postgres:// URL that several gateways share (default: Badger under DATA/kv)")
	o.store.add(f)
	o.memory.add(f)
	f.StringVar(&o.keys, "keys", "", "keyring of sensitive content's domain keys (default DATA/keys; keep it out of the data directory's backups)")
	f.StringVar(&o.adapters, "source-adapters", "", "folder of the adapter programs exec: sources may run (default: none may run)")
	f.StringVar(&o.checkCommands, "check-commands", "", "folder of the programs command checks may run (default: none may run)")
	f.StringVar(&o.tlsCert, "tls-cert", "", "TLS certificate (PEM; SIGHUP reloads it)")
	f.StringVar(&o.tlsKey, "tls-key", "", "TLS private key (PEM; SIGHUP reloads it)")
	f.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP on a non-loopback address")
	f.StringVar(&o.region, "region", "us-east-1", "region reported to S3 clients (any region is accepted in signatures)")
	f.StringSliceVar(&o.domains, "domain", []string{"localhost"}, "domain for virtual-host style requests (BUCKET.DOMAIN)")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "text or json (one JSON object a line)")
	f.StringVar(&o.logFile, "log-file", "", "append logs to this file, reopened on SIGHUP for log rotation (default: standard error)")
	f.DurationVar(&o.gcInterval, "gc-interval", 6*time.Hour, "run garbage collection this often (0 disables; 'nas gc' runs it on demand)")
	f.DurationVar(&o.retention, "retention", branch.DefaultRetention, "keep history (commits and versions) younger than this")
	f.DurationVar(&o.scratchTTL, "scratch-ttl", branch.DefaultScratchTTL, "delete scratch files (retention class scratch) this long after they were written")
	f.DurationVar(&o.deletedKeep, "deleted-retention", branch.DefaultDeletedRetention, "keep deleted branches restorable ('nas branch restore') this long")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", gateway.DefaultShutdownTimeout, "on SIGTERM or SIGINT, wait this long for in-flight requests")
	f.StringVar(&o.publicURL, "public-url", "", "the gateway's address as people reach it (https://nas.example.com), for the control-room links webhooks carry (default: a path)")
	f.StringVar(&o.pprofAddr, "pprof-addr", "", "serve Go's profiles (/debug/pprof/) on this loopback address, without authentication (off by default)")
	f.StringVar(&o.metricsAddr, "metrics-addr", "", "also serve /_nas/metrics and the health endpoints, without authentication, on this address (bind it to a private interface)")
	return cmd
}

// runServe opens the data directory and serves S3 and the control API
// until ctx ends, collecting garbage every --gc-interval and reloading
// what can be reloaded on SIGHUP.
func runServe(ctx context.Context, o serveOptions) error {
	if gateway.IsSharedMeta(o.meta) && (o.keys == "" || o.store.chunks == "") {
		return usagef("--meta is shared with other gateways: give --chunks (a shared directory or s3://BUCKET/PREFIX) and --keys (a shared directory) too, else one gateway's chunks and sealed content's keys are not the others'")
	}
	if o.pprofAddr != "" && !gateway.IsLoopback(o.pprofAddr) {
		return usagef("--pprof-addr %s: profiles are served on a loopback address only", o.pprofAddr)
	}
	log, lf, err := serveLogger(o)
	if err != nil {
		return err
	}
	if lf != nil {
		defer lf.Close()
	}
	kp, err := serveKeyPair(o)
	if err != nil {
		return err
	}
	owner, generated, err := gateway.OwnerCredentials(o.data, os.Getenv)
	if err != nil {
		return err
	}
	gc := gateway.Config{DataDir: o.data, KeysDir: o.keys, Owner: owner, Region: o.region, Domains: o.domains, Log: log,
		Sources: source.Options{Adapters: o.adapters}, Meta: o.meta, Checks: check.Options{Commands: o.checkCommands},
		Hooks: hook.Options{PublicURL: o.publicURL}}
	o.store.apply(&gc)
	applyProcs(gc.DirectWrites, os.Getenv, log)
	if err := o.memory.apply(&gc, os.Getenv, log); err != nil {
		return err
	}
	g, err := gateway.Open(gc)
	if err != nil {
		return err
	}
	defer g.Close()
	g.Branches.SetDeletedRetention(o.deletedKeep)
	g.Branches.SetScratchTTL(o.scratchTTL)
	g.Start()
	if o.gcInterval > 0 {
		// With other gateways, one of them collects for all.
		go g.AsDuty("gc", func(ctx context.Context) { collectEvery(ctx, g, o, log) })(ctx)
	}
	defer reloadOnHangup(ctx, kp, lf, log)()
	if o.metricsAddr != "" {
		go serveMetrics(ctx, g, o.metricsAddr, log)
	}
	if o.pprofAddr != "" {
		go serveProfiles(ctx, o.pprofAddr, log)
	}
	return gateway.Serve(ctx, g.Handler(), gateway.ServeOptions{
		Addr: o.addr, KeyPair: kp, Insecure: o.insecure, ShutdownTimeout: o.shutdownTimeout,
		Ready: func(addr net.Addr) { banner(os.Stderr, log, o, addr, owner, generated) },
	}, log)
}

// serveLogger is the logger --log-format and --log-level ask for, on
// stderr or on the --log-file it returns.
func serveLogger(o serveOptions) (*slog.Logger, *logFile, error) {
	level := new(slog.LevelVar)
	if err := parseLevel(level, o.logLevel); err != nil {
		return nil, nil, err
	}
	if o.logFile == "" {
		log, err := newLogger(os.Stderr, o.logFormat, level)
		return log, nil, err
	}
	lf, err := openLogFile(o.logFile)
	if err != nil {
		return nil, nil, err
	}
	log, err := newLogger(lf, o.logFormat, level)
	if err != nil {
		lf.Close()
		return nil, nil, err
	}
	return log, lf, nil
}

// serveMetrics serves the metrics and health endpoints on addr, without
// authentication and in plain HTTP (they reveal nothing about data),
// until ctx ends.
func serveMetrics(ctx context.Context, g *gateway.Gateway, addr string, log *slog.Logger) {
	err := gateway.Serve(ctx, g.MetricsHandler(), gateway.ServeOptions{Addr: addr, Insecure: true,
		Ready: func(a net.Addr) {
			log.Info("serving metrics and health", "url", "http://"+a.String()+gateway.MetricsPath)
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
