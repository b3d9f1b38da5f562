package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	gofs "github.com/hanwen/go-fuse/v2/fs"
	gofuse "github.com/hanwen/go-fuse/v2/fuse"
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/auth"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/conformance"
	"github.com/agentnas/nas/fuse"
	"github.com/agentnas/nas/gateway"
)

// version is the implementation version reported in conformance.json.
var version = "0.1.0-dev"

// conformanceOptions are the flags of `nas conformance`.
type conformanceOptions struct {
	out    string
	strict bool
}

// newConformanceCmd builds `nas conformance`.
func newConformanceCmd() *cobra.Command {
	var o conformanceOptions
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Run the Agent NAS L0-L2 acceptance tests and write conformance.json",
		Long: `Run the Agent NAS specification's L0, L1 and L2 acceptance tests.

Without --endpoint the tests run against a fresh gateway started in this
process on a temporary data directory, so the tamper half of L1.6 (altering
a stored record and watching verification fail) runs too. With --endpoint
they run against that gateway with the owner credentials given; they create
a repository named conformance-<time> there and leave it behind.

The mount parts of L0.5 and L1.3 mount run branches with FUSE (nas mount)
in temporary directories, with the leases' credentials. On a host where
FUSE mounts are not possible they are skipped, and the report says why
(a declared deviation).

The report (the specification's conformance.json) is printed and, with
--out, written to a file. The exit status is 1 when a test without a
declared deviation fails, or with --strict when any test fails.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConformance(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.out, "out", "", "write conformance.json here")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "fail on any failing test, even one with a declared deviation")
	return cmd
}

// runConformance runs the suite, prints (and with --out writes) its
// report, and fails as conformanceVerdict says.
func runConformance(ctx context.Context, o conformanceOptions) error {
	rep, err := conformanceReport(ctx)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if o.out != "" {
		if err := os.WriteFile(o.out, b, 0o644); err != nil {
			return err
		}
	}
	if cf.json {
		os.Stdout.Write(b)
	} else {
		printConformance(os.Stdout, rep)
	}
	return conformanceVerdict(rep, o.strict)
}

// conformanceReport runs the suite against --endpoint, or against a
// gateway of its own when none is given.
func conformanceReport(ctx context.Context) (*conformance.Report, error) {
	t := conformance.Target{Implementation: "agentnas", Version: version, Mount: conformanceMount}
	if why := fuseUnavailable(); why != "" {
		t.Mount, t.MountMissing = nil, why
	}
	if cf.endpoint != "" || os.Getenv("NAS_ENDPOINT") != "" {
		c, err := newClient()
		if err != nil {
			return nil, err
		}
		t.Endpoint, t.Owner = c.endpoint, c.creds
		return conformance.Run(ctx, t), nil
	}
	dir, err := os.MkdirTemp("", "nas-conformance-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	owner := auth.Owner{AccessKey: "conformance-owner", SecretKey: "conformance-owner-secret-key"}
	g, err := gateway.Open(gateway.Config{DataDir: dir, Owner: owner, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	g.Start()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	t.Endpoint = "http://" + ln.Addr().String()
	t.Owner = aws.Credentials{AccessKeyID: owner.AccessKey, SecretAccessKey: owner.SecretKey}
	t.Tamper = conformance.TamperFirstRecord(g.DB)
	return conformance.Run(ctx, t), nil
}

// conformanceVerdict fails when a test failed that no deviation explains
// (or any test, when strict).
func conformanceVerdict(rep *conformance.Report, strict bool) error {
	var failed []string
	for id, res := range rep.Tests {
		if res == "pass" {
			continue
		}
		if strict || !rep.Declared(id) {
			failed = append(failed, id)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	slices.Sort(failed)
	return fmt.Errorf("conformance: %v failed", failed)
}

// printConformance prints the report for a person: the level reached,
// each test's result and the declared deviations.
func printConformance(w io.Writer, rep *conformance.Report) {
	ids := make([]string, 0, len(rep.Tests))
	for id := range rep.Tests {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	level := rep.Level
	if level == "" {
		level = "none"
	}
	fmt.Fprintf(w, "%s %s, specification %s: level %s\n", rep.Implementation, rep.Version, rep.Spec, level)
	for _, id := range ids {
		fmt.Fprintf(w, "  %-5s %-4s %s\n", id, rep.Tests[id], rep.Details[id])
	}
	for _, d := range rep.Deviations {
		fmt.Fprintf(w, "  deviation: %s\n", d)
	}
}

// conformanceMount mounts the branch of a lease (the JSON of `nas lease
// create --json`, with its endpoint) in a temporary directory, with the
// lease's credentials, as `nas mount --lease-json` would.
func conformanceMount(ctx context.Context, leaseJSON []byte) (string, func(), error) {
	var lf nasclient.LeaseFile
	if err := json.Unmarshal(leaseJSON, &lf); err != nil || lf.AccessKeyID == "" {
		return "", nil, fmt.Errorf("not a lease with credentials: %w", err)
	}
	c := nasclient.New(nasclient.Config{Endpoint: lf.Endpoint, Attempts: 2,
		Credentials: aws.Credentials{AccessKeyID: lf.AccessKeyID, SecretAccessKey: lf.SecretAccessKey, SessionToken: lf.SessionToken}})
	tmp, err := os.MkdirTemp("", "nas-conformance-mount-")
	if err != nil {
		return "", nil, err
	}
	dir := filepath.Join(tmp, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	m, err := fuse.New(ctx, dir, fuse.Options{Client: c, Repo: lf.Repo, Branch: lf.Branch, CacheDir: filepath.Join(tmp, "cache"),
		CommitAfter: -1, TTL: 250 * time.Millisecond})
	if err != nil {
		os.RemoveAll(tmp)
		return "", nil, err
	}
	return dir, func() {
		uctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Unmount(uctx)
		// Never RemoveAll through a mount that is somehow still there:
		// that would delete the run's files on the gateway.
		os.RemoveAll(filepath.Join(tmp, "cache"))
		os.Remove(dir)
		os.Remove(tmp)
	}, nil
}

// fuseUnavailable says why this host cannot mount with FUSE ("" when it
// can), by mounting an empty file system for a moment.
func fuseUnavailable() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "FUSE is unavailable on this host: no /dev/fuse"
	}
	dir, err := os.MkdirTemp("", "nas-fuse-probe-")
	if err != nil {
		return "FUSE probe: " + err.Error()
	}
	defer os.Remove(dir)
	srv, err := gofs.Mount(dir, &gofs.Inode{}, &gofs.Options{MountOptions: gofuse.MountOptions{
		FsName: "nas-probe", Name: "nas", DirectMount: os.Geteuid() == 0}})
	if err != nil {
		return "FUSE mounts fail on this host: " + err.Error()
	}
	if err := srv.Unmount(); err != nil {
		return "FUSE probe did not unmount: " + err.Error()
	}
	return ""
}
