package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"

	"github.com/agentnas/nas/auth"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/gateway"
)

// Kinds of Target.
const (
	KindNAS      = "nas"      // our gateway, started in this process
	KindGoFakeS3 = "gofakes3" // gofakes3 with its on-disk backend, in this process
	KindEndpoint = "endpoint" // any S3 endpoint given by URL and credentials
)

// Target is an S3 endpoint under test.
type Target struct {
	Name     string
	Kind     string
	Endpoint string
	Region   string
	Creds    aws.Credentials
	// DataDir is the directory holding the target's data when the harness
	// started the target itself (so it can measure bytes stored and evict
	// it from the page cache); empty for endpoints.
	DataDir string
	// Gateway is the in-process gateway of a KindNAS target, for workloads
	// that need the branch service (fork, commit, diff) directly.
	Gateway *gateway.Gateway
	// Backend is gofakes3's backend for a KindGoFakeS3 target, for loading
	// large listings without going through HTTP.
	Backend gofakes3.Backend
	// Client is the load generator's client for the target.
	Client *Client
	// API is the control-API client of a KindNAS target (nil for the
	// other kinds); it shares Client's connections.
	API *nasclient.Client

	close        func() error
	bucketPrefix string     // endpoints: a prefix unique to the run
	mu           sync.Mutex // guards buckets
	buckets      []string   // endpoints: buckets to empty and delete on Close
}

// Bucket creates a bucket for a workload and returns its name: base on
// targets the harness started, base with a run-unique prefix on endpoints
// (where Close empties and deletes it again).
func (t *Target) Bucket(ctx context.Context, base string) (string, error) {
	name := t.bucketPrefix + base
	if err := t.Client.CreateBucket(ctx, name); err != nil {
		return "", err
	}
	if t.bucketPrefix != "" {
		t.mu.Lock()
		t.buckets = append(t.buckets, name)
		t.mu.Unlock()
	}
	return name, nil
}

// Local reports whether the harness started the target and owns its data
// directory.
func (t *Target) Local() bool { return t.DataDir != "" }

// Close stops a target the harness started and closes its client.
func (t *Target) Close() error {
	var errs []error
	t.mu.Lock()
	buckets := t.buckets
	t.buckets = nil
	t.mu.Unlock()
	for _, b := range buckets {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := t.Client.EmptyBucket(ctx, b); err != nil {
			errs = append(errs, fmt.Errorf("clean up %s on %s: %w", b, t.Name, err))
		}
		cancel()
	}
	if t.Client != nil {
		t.Client.Close()
	}
	if t.close != nil {
		errs = append(errs, t.close())
	}
	return errors.Join(errs...)
}

// Owner credentials of the in-process targets.
const (
	benchAccessKey = "AKIANASBENCHOWNER001"
	benchSecretKey = "nasbench/owner/secret/key/0123456789abcdef"
)

// BenchCredentials are the owner credentials of every server the harness
// starts itself (in-process or spawned).
func BenchCredentials() aws.Credentials {
	return aws.Credentials{AccessKeyID: benchAccessKey, SecretAccessKey: benchSecretKey}
}

// StartGateway opens our gateway on dataDir and serves it on a free
// loopback port, the way `nas serve` does (the same gateway.Open and
// gateway.Serve), with the harness's owner credentials. Close stops it.
func StartGateway(ctx context.Context, name, dataDir string, log *slog.Logger) (*Target, error) {
	return startGatewayWith(ctx, name, gateway.Config{DataDir: dataDir, Log: log})
}

// startGatewayWith is StartGateway for any configuration (a shared
// metadata store); the owner credentials are the harness's.
func startGatewayWith(ctx context.Context, name string, c gateway.Config) (*Target, error) {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	log, dataDir := c.Log, c.DataDir
	c.Owner = auth.Owner{AccessKey: benchAccessKey, SecretKey: benchSecretKey}
	g, err := gateway.Open(c)
	if err != nil {
		return nil, fmt.Errorf("open gateway: %w", err)
	}
	g.Start()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- gateway.Serve(sctx, g.Handler(), gateway.ServeOptions{Addr: "127.0.0.1:0", Ready: func(a net.Addr) { ready <- a }}, log)
	}()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		g.Close()
		return nil, fmt.Errorf("serve gateway: %w", err)
	case <-time.After(10 * time.Second):
		cancel()
		g.Close()
		return nil, errors.New("serve gateway: not listening after 10s")
	}
	endpoint := "http://" + addr.String()
	t := &Target{Name: name, Kind: KindNAS, Endpoint: endpoint, Region: "us-east-1", Creds: BenchCredentials(),
		DataDir: dataDir, Gateway: g}
	t.Client = NewClient(endpoint, t.Region, t.Creds)
	t.API = controlClient(t)
	t.close = func() error {
		cancel()
		serr := <-done
		cerr := g.Close()
		if serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			return serr
		}
		return cerr
	}
	return t, nil
}

// controlClient returns the control-API client of t. A call is tried
// once, as the load generator's requests are: a failure is reported, not
// retried into the timings.
func controlClient(t *Target) *nasclient.Client {
	return nasclient.New(nasclient.Config{Endpoint: t.Endpoint, Region: t.Region, Credentials: t.Creds, HTTP: t.Client.HTTP, Attempts: 1})
}

// NewGoFakeS3Backend returns gofakes3's on-disk backend (s3afero over the
// OS file system) rooted at dir.
func NewGoFakeS3Backend(dir string) (gofakes3.Backend, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("gofakes3 dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	be, err := s3afero.MultiBucket(afero.NewBasePathFs(afero.NewOsFs(), abs))
	if err != nil {
		return nil, fmt.Errorf("gofakes3 backend: %w", err)
	}
	return be, nil
}

// StartGoFakeS3 serves gofakes3 with its on-disk backend in dataDir on a
// free loopback port: what a Go developer would reach for as a local S3.
// It writes objects to files without fsync, holds multipart parts in
// memory and checks no signatures.
func StartGoFakeS3(ctx context.Context, name, dataDir string) (*Target, error) {
	be, err := NewGoFakeS3Backend(dataDir)
	if err != nil {
		return nil, err
	}
	endpoint, stop, err := ServeHandler(ctx, gofakes3.New(be).Server())
	if err != nil {
		return nil, err
	}
	t := &Target{Name: name, Kind: KindGoFakeS3, Endpoint: endpoint, Region: "us-east-1", Creds: BenchCredentials(),
		DataDir: dataDir, Backend: be, close: stop}
	t.Client = NewClient(endpoint, t.Region, t.Creds)
	return t, nil
}

// NewEndpoint returns a target for an S3 endpoint the harness does not own.
func NewEndpoint(name, endpoint, region string, creds aws.Credentials) *Target {
	if region == "" {
		region = "us-east-1"
	}
	t := &Target{Name: name, Kind: KindEndpoint, Endpoint: endpoint, Region: region, Creds: creds}
	t.Client = NewClient(endpoint, region, creds)
	return t
}

// ServeHandler serves h on a free loopback port until stop is called and
// returns its base URL.
func ServeHandler(ctx context.Context, h http.Handler) (endpoint string, stop func() error, err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop = func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		<-done
		return err
	}
	return "http://" + ln.Addr().String(), stop, nil
}
