// Command nas-bench is the benchmark harness of the Agent NAS gateway: it
// runs the workloads of package bench against our gateway, gofakes3 and any
// S3 endpoint side by side, with baselines measured in the same run. It is
// a binary of its own so that the product binary, nas, links no test
// double and no plotting.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/bench"
	"github.com/agentnas/nas/bytesize"
	nasclient "github.com/agentnas/nas/client"
)

// benchOptions are the flags of nas-bench.
type benchOptions struct {
	workloads   []string
	targets     []string
	targetPIDs  []string
	quick, full bool
	out         []string
	plots       string
	region      string
	dir         string
	dropCaches  bool
	mountPeers  []string
	lakeFS      string
	list        bool
	cpuProfile  string
	fromJSON    string

	// Overrides of the mode's profile.
	reps          int
	duration      time.Duration
	warmup        int
	count         int
	concurrency   []int
	sizes         []string
	soak          time.Duration
	soakLarge     string
	soakLargeOnly bool

	serveChild string // hidden: run as a spawned server (kind,dir,addr)
	command    string
	json       bool

	// Credentials of endpoint targets, resolved as the nas client does.
	creds nasclient.Source
}

// exit codes: 0 success, 1 failure, 2 usage.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks errors caused by how the command was called.
type usageError struct{ error }

// usagef is a usageError with a formatted message.
func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// main runs nas-bench and exits with its status.
func main() { os.Exit(run(os.Args[1:])) }

// run runs nas-bench with args and returns its exit code.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newBenchCmd()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "nas-bench:", err)
	var ue usageError
	if errors.As(err, &ue) || strings.Contains(err.Error(), "unknown flag") || strings.Contains(err.Error(), "unknown command") {
		return exitUsage
	}
	return exitFailure
}

// newBenchCmd builds the nas-bench command.
func newBenchCmd() *cobra.Command {
	var o benchOptions
	cmd := &cobra.Command{
		Use:   "nas-bench",
		Short: "Run the benchmark harness: our gateway, gofakes3 and any S3 endpoint side by side, with baselines",
		Long: `Run named workloads against every target side by side and report
throughput (MiB/s, ops/s), latency (p50, p99), the spread over repeated
runs, and the ratio of our gateway's figure to every other target's and
baseline's, all measured in the same run.

Targets: "nas" (our gateway, started in this process on a temporary data
directory; always included, the reference for ratios), "gofakes3" (with its
on-disk backend) and NAME=URL for any S3 endpoint (MinIO, another gateway,
AWS). Endpoint credentials follow the client rules: --access-key and
--secret-key, else NAS_ACCESS_KEY/NAS_SECRET_KEY, else AWS_ACCESS_KEY_ID/
AWS_SECRET_ACCESS_KEY (or --lease-json). The harness creates buckets named
nasbench-<run>-... there and deletes them afterwards. Without --target the
targets are nas and gofakes3.

Baselines need nothing installed: plain files in the same file system
(write + fsync, read, cold reads after evicting the page cache), MD5,
SHA-256 and BLAKE3 throughput, and loopback HTTP to a handler that discards
the body.

--quick (the default) finishes in about a minute on two cores; --full is
the record (tens of minutes, several GiB of disk). The report is Markdown
on standard output (JSON with --json); --out writes it to files (.json for
JSON, anything else Markdown) and --plots DIR draws the scaling curves as
PNG.`,
		Example: `  nas-bench --quick
  nas-bench --full --out bench/RESULTS-full.md --out results.json --plots bench/plots
  nas-bench --workloads put,get --target gofakes3 --target minio=http://127.0.0.1:9100 --target-pid minio=$(pgrep -x minio)
  nas-bench --workloads put --sizes 4KiB --concurrency 1,64 --duration 5s --reps 3`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usagef("nas-bench takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.command = "nas-bench " + strings.Join(redactArgs(os.Args[1:]), " ")
			return runBench(cmd.Context(), o)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	o.addFlags(cmd)
	return cmd
}

// addFlags declares the flags of nas-bench on cmd, bound to o.
func (o *benchOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.creds.AccessKey, "access-key", "", "access key of endpoint targets (default $NAS_ACCESS_KEY, $AWS_ACCESS_KEY_ID)")
	f.StringVar(&o.creds.SecretKey, "secret-key", "", "secret key of endpoint targets (default $NAS_SECRET_KEY, $AWS_SECRET_ACCESS_KEY)")
	f.StringVar(&o.creds.SessionToken, "session-token", "", "session token of endpoint targets (default $NAS_SESSION_TOKEN, $AWS_SESSION_TOKEN)")
	f.StringVar(&o.creds.LeaseJSON, "lease-json", "", "use the credentials of this lease file (the output of `nas lease create --json`)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.StringSliceVar(&o.workloads, "workloads", nil, "workloads to run, comma-separated (default all; see --list)")
	f.StringArrayVar(&o.targets, "target", nil, "target: nas, gofakes3 or NAME=URL (repeatable)")
	f.StringArrayVar(&o.targetPIDs, "target-pid", nil, "NAME=PID: the server process of endpoint NAME on this machine, for the memory workload (repeatable)")
	f.BoolVar(&o.quick, "quick", false, "quick mode: a sanity check in about a minute (the default)")
	f.BoolVar(&o.full, "full", false, "full mode: every size and concurrency, for the record")
	f.StringArrayVar(&o.out, "out", nil, "write the report here: FILE.json as JSON, any other name as Markdown (repeatable)")
	f.StringVar(&o.plots, "plots", "", "draw the scaling curves as PNG files in this directory")
	f.StringVar(&o.region, "region", "us-east-1", "region for signing requests to endpoint targets")
	f.StringVar(&o.dir, "dir", "", "scratch directory for the in-process targets and the file baselines (default a new one under $TMPDIR; its file system is the one measured)")
	f.BoolVar(&o.dropCaches, "drop-caches", false, "before cold reads, also empty the whole page cache through /proc/sys/vm/drop_caches (root; affects the whole machine)")
	f.StringVar(&o.lakeFS, "lakefs", "", "URL of a lakeFS server (credentials in LAKEFS_ACCESS_KEY and LAKEFS_SECRET_KEY) that the merge workload runs the same 1,000-change rounds against, on a tree of the same size")
	f.StringArrayVar(&o.mountPeers, "mount-peer", nil, "NAME=DIR: another file system mounted at DIR (JuiceFS, say) that the FUSE workloads measure beside our mount (repeatable)")
	f.BoolVar(&o.list, "list", false, "list the workloads and exit")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (the in-process gateway and the load generator) to this file")
	f.IntVar(&o.reps, "reps", 0, "runs per subject and case (default: the mode's)")
	f.DurationVar(&o.duration, "duration", 0, "length of one measured run (default: the mode's)")
	f.IntVar(&o.warmup, "warmup", -1, "unmeasured operations per client before each run (default: the mode's)")
	f.IntVar(&o.count, "count", 0, "at most this many operations per measured run (default: bounded by the mode's bytes per run)")
	f.IntSliceVar(&o.concurrency, "concurrency", nil, "PUT/GET client counts, e.g. 1,8,32 (default: the mode's)")
	f.StringSliceVar(&o.sizes, "sizes", nil, "PUT/GET object sizes, e.g. 4KiB,1MiB,64MiB (default: the mode's)")
	f.DurationVar(&o.soak, "soak", 0, "length of each phase of the soak workload, per server (default: the mode's, 10s quick, 10m full)")
	f.StringVar(&o.soakLarge, "soak-large", "", "object size of the soak's multipart phase, e.g. 64MiB (default: the mode's; 0 skips that phase)")
	f.BoolVar(&o.soakLargeOnly, "soak-large-only", false, "run the soak's multipart phase alone, without its 4 KiB phase")
	f.StringVar(&o.fromJSON, "from-json", "", "run nothing: read this JSON report (as --out FILE.json wrote it) and write its plots (--plots) and reports (--out, standard output) again, e.g. to redraw a run's plots elsewhere")
	f.StringVar(&o.serveChild, "serve-child", "", "")
	_ = f.MarkHidden("serve-child")
}

// runBench runs the workloads against the targets and writes the report;
// --list and the hidden --serve-child do their own thing instead.
func runBench(ctx context.Context, o benchOptions) error {
	if o.serveChild != "" {
		return serveBenchChild(o.serveChild)
	}
	if o.list {
		listWorkloads()
		return nil
	}
	if o.fromJSON != "" {
		if len(o.workloads) > 0 || len(o.targets) > 0 {
			return usagef("--from-json runs nothing: --workloads and --target do not go with it")
		}
		rep, err := readReport(o.fromJSON)
		if err != nil {
			return err
		}
		return o.writeReport(rep)
	}
	p, err := o.profile()
	if err != nil {
		return err
	}
	specs, err := o.targetSpecs()
	if err != nil {
		return err
	}
	peers, err := o.peers()
	if err != nil {
		return err
	}
	lake, err := o.lakeFSPeer()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary (to start server processes): %w", err)
	}
	if o.cpuProfile != "" {
		stop, err := startCPUProfile(o.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	rep, err := bench.Run(ctx, bench.Options{
		Profile:    p,
		Workloads:  o.workloads,
		Targets:    specs,
		Dir:        o.dir,
		Log:        slog.New(slog.DiscardHandler),
		DropCaches: o.dropCaches,
		MountPeers: peers,
		LakeFS:     lake,
		Command:    o.command,
		Spawn: func(kind, dir, addr string) *exec.Cmd {
			return exec.Command(exe, "--serve-child", kind+","+dir+","+addr)
		},
		Progress: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "nas-bench: "+format+"\n", args...)
		},
	})
	if err != nil {
		if strings.HasPrefix(err.Error(), "bench: no workload") {
			return usageError{err}
		}
		return err
	}
	return o.writeReport(rep)
}

// readReport reads a JSON report written by --out FILE.json.
func readReport(path string) (*bench.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rep, err := decodeReport(b)
	if err != nil {
		return nil, usagef("--from-json %s: not a report: %v", path, err)
	}
	return rep, nil
}

// decodeReport decodes a JSON report, refusing null results.
func decodeReport(b []byte) (*bench.Report, error) {
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, err
	}
	for i, r := range rep.Results {
		if r == nil {
			return nil, fmt.Errorf("result %d is null", i)
		}
	}
	return &rep, nil
}

// listWorkloads prints the registered workloads with their descriptions.
func listWorkloads() {
	for _, w := range bench.Registered() {
		fmt.Printf("%-14s %s\n", w.Name, w.Doc)
	}
}

// profile is the profile of the mode (--quick, the default, or --full)
// with the flags' overrides.
func (o benchOptions) profile() (bench.Profile, error) {
	if o.quick && o.full {
		return bench.Profile{}, usagef("--quick and --full exclude each other")
	}
	mode := "quick"
	if o.full {
		mode = "full"
	}
	p, err := bench.ProfileFor(mode)
	if err != nil {
		return p, err
	}
	if err := o.override(&p); err != nil {
		return p, err
	}
	return p, nil
}

// startCPUProfile profiles this process's CPU into the file path until
// stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		pf.Close()
	}, nil
}

// writeReport draws the plots, writes the --out files and prints the
// report; it fails when a workload failed.
func (o benchOptions) writeReport(rep *bench.Report) error {
	if o.plots != "" {
		files, err := rep.WritePlots(o.plots)
		if err != nil {
			return err
		}
		for _, f := range files {
			fmt.Fprintf(os.Stderr, "nas-bench: wrote %s\n", f)
		}
	}
	for _, out := range o.out {
		if err := o.writeReportFile(rep, out); err != nil {
			return err
		}
	}
	var err error
	if o.json {
		err = rep.WriteJSON(os.Stdout)
	} else {
		err = rep.WriteMarkdown(os.Stdout, o.plotDir(""))
	}
	if err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return fmt.Errorf("%d workload(s) failed: %s", len(rep.Failures), rep.Failures[0].Error)
	}
	return nil
}

// writeReportFile writes the report to the file out: JSON for a .json
// name, else Markdown.
func (o benchOptions) writeReportFile(rep *bench.Report, out string) error {
	var buf bytes.Buffer
	var err error
	if strings.HasSuffix(out, ".json") {
		err = rep.WriteJSON(&buf)
	} else {
		err = rep.WriteMarkdown(&buf, o.plotDir(out))
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "nas-bench: wrote %s\n", out)
	return nil
}

// plotDir is the --plots directory as a Markdown report written to
// outFile ("": standard output) links to it: relative to the report's
// directory when it can be.
func (o benchOptions) plotDir(outFile string) string {
	if o.plots == "" {
		return ""
	}
	if outFile == "" {
		return o.plots
	}
	absOut, err1 := filepath.Abs(filepath.Dir(outFile))
	absPlots, err2 := filepath.Abs(o.plots)
	if err1 != nil || err2 != nil {
		return o.plots
	}
	if rel, err := filepath.Rel(absOut, absPlots); err == nil {
		return rel
	}
	return o.plots
}

// redactArgs hides the values of secret flags in the command line that the
// report records.
func redactArgs(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		for _, f := range []string{"--secret-key", "--session-token"} {
			switch {
			case a == f && i+1 < len(out):
				out[i+1] = "REDACTED"
			case strings.HasPrefix(a, f+"="):
				out[i] = f + "=REDACTED"
			}
		}
	}
	return out
}

// override applies the profile flags.
func (o benchOptions) override(p *bench.Profile) error {
	if o.reps > 0 {
		p.Reps = o.reps
	}
	if o.duration > 0 {
		p.Duration = o.duration
	}
	if o.warmup >= 0 {
		p.Warmup = o.warmup
	}
	if o.count > 0 {
		p.MaxOps = o.count
	}
	if o.soak > 0 {
		p.SoakDuration = o.soak
	}
	p.SoakLargeOnly = o.soakLargeOnly
	if o.soakLarge != "" {
		v, err := bytesize.Parse(o.soakLarge)
		if err != nil {
			return fmt.Errorf("--soak-large: %w", err)
		}
		p.SoakLarge = v
	}
	if len(o.sizes) == 0 && len(o.concurrency) == 0 {
		return nil
	}
	var sizes []int64
	var concs []int
	for _, c := range p.Cases {
		if !slices.Contains(sizes, c.Size) {
			sizes = append(sizes, c.Size)
		}
		if !slices.Contains(concs, c.Concurrency) {
			concs = append(concs, c.Concurrency)
		}
	}
	if len(o.sizes) > 0 {
		sizes = nil
		for _, s := range o.sizes {
			v, err := bytesize.Parse(s)
			if err != nil || v <= 0 {
				return usagef("--sizes: %q is not a positive size", s)
			}
			sizes = append(sizes, v)
		}
	}
	if len(o.concurrency) > 0 {
		concs = nil
		for _, c := range o.concurrency {
			if c < 1 {
				return usagef("--concurrency: %d is not a positive count", c)
			}
			concs = append(concs, c)
		}
	}
	p.Cases = nil
	for _, s := range sizes {
		for _, c := range concs {
			p.Cases = append(p.Cases, bench.Case{Size: s, Concurrency: c})
		}
	}
	return nil
}

// targetSpecs parses --target; endpoints get the client credentials.
func (o benchOptions) targetSpecs() ([]bench.TargetSpec, error) {
	vals := o.targets
	if len(vals) == 0 {
		vals = []string{bench.KindNAS, bench.KindGoFakeS3}
	}
	var specs []bench.TargetSpec
	var creds *aws.Credentials
	for _, v := range vals {
		s, err := bench.ParseTarget(v)
		if err != nil {
			return nil, usageError{err}
		}
		if s.Kind == bench.KindEndpoint {
			if creds == nil {
				cfg, _, err := nasclient.Resolve(o.creds)
				if err != nil {
					return nil, usageError{err}
				}
				creds = &cfg.Credentials
			}
			s.Creds, s.Region = *creds, o.region
		}
		specs = append(specs, s)
	}
	for _, v := range o.targetPIDs {
		name, p, _ := strings.Cut(v, "=")
		pid, err := strconv.Atoi(p)
		i := slices.IndexFunc(specs, func(s bench.TargetSpec) bool { return s.Name == name })
		if err != nil || pid <= 0 || i < 0 || specs[i].Kind != bench.KindEndpoint {
			return nil, usagef("--target-pid %q: want NAME=PID for an endpoint given with --target", v)
		}
		specs[i].PID = pid
	}
	return specs, nil
}

// peers are the --mount-peer file systems: each NAME=DIR a mounted
// directory.
func (o *benchOptions) peers() ([]bench.MountPeer, error) {
	var out []bench.MountPeer
	for _, v := range o.mountPeers {
		name, dir, ok := strings.Cut(v, "=")
		if !ok || name == "" || dir == "" {
			return nil, usagef("--mount-peer %q: want NAME=DIR", v)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, usagef("--mount-peer %s: %s is not a directory", name, dir)
		}
		out = append(out, bench.MountPeer{Name: name, Dir: dir})
	}
	return out, nil
}

// serveBenchChild is the process the memory workload starts and measures.
func serveBenchChild(spec string) error {
	parts := strings.SplitN(spec, ",", 3)
	if len(parts) != 3 {
		return usagef("--serve-child: want kind,dir,addr")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return bench.ServeChild(ctx, parts[0], parts[1], parts[2])
}

// lakeFSPeer is the --lakefs server with its credentials, or nil.
func (o *benchOptions) lakeFSPeer() (*bench.LakeFS, error) {
	if o.lakeFS == "" {
		return nil, nil
	}
	u, err := url.Parse(o.lakeFS)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usagef("--lakefs %q: want http://HOST:PORT", o.lakeFS)
	}
	l := &bench.LakeFS{Endpoint: strings.TrimSuffix(o.lakeFS, "/"),
		AccessKey: os.Getenv("LAKEFS_ACCESS_KEY"), Secret: os.Getenv("LAKEFS_SECRET_KEY")}
	if l.AccessKey == "" || l.Secret == "" {
		return nil, usagef("--lakefs needs LAKEFS_ACCESS_KEY and LAKEFS_SECRET_KEY")
	}
	return l, nil
}
