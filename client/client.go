package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// DefaultEndpoint is where a gateway started with no flags listens.
const DefaultEndpoint = "http://127.0.0.1:9000"

// Config says where the gateway is, who is calling and how hard to retry.
type Config struct {
	Endpoint    string
	Credentials aws.Credentials
	// Region signs requests; the gateway accepts any (default us-east-1).
	Region string
	// HTTP is the transport; nil means a pooled client with bounded
	// connect and response-header timeouts.
	HTTP *http.Client
	// Attempts bounds the tries of a call whose failure a retry may cure
	// (default 4); Backoff is the first pause between them, doubled after
	// each try (default 100 ms).
	Attempts int
	Backoff  time.Duration
}

// LeaseFile is the part of a lease JSON file (`nas lease create --json`)
// a client needs: where the gateway is, which branch, and the credentials.
type LeaseFile struct {
	LeaseID         string    `json:"lease_id"`
	Run             string    `json:"run"`
	Endpoint        string    `json:"endpoint"`
	Repo            string    `json:"repo"`
	Branch          string    `json:"branch"`
	AccessKeyID     string    `json:"access_key_id"`
	SecretAccessKey string    `json:"secret_access_key"`
	SessionToken    string    `json:"session_token"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// ReadLeaseFile reads and checks a lease JSON file.
func ReadLeaseFile(path string) (*LeaseFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lease file: %w", err)
	}
	var lf LeaseFile
	if err := json.Unmarshal(b, &lf); err != nil || lf.AccessKeyID == "" || lf.SecretAccessKey == "" {
		return nil, fmt.Errorf("%s is not a lease file with credentials: %w", path, ErrNoCredentials)
	}
	return &lf, nil
}

// Source is what a command was given to find its credentials: flags
// (empty when not set), a lease file, an alias, an AWS profile, and the
// data directory where `nas serve` keeps generated owner credentials.
type Source struct {
	Endpoint, AccessKey, SecretKey, SessionToken string
	LeaseJSON                                    string
	// Alias names an entry of the alias file (AliasPath) given on the
	// command line; NAS_ALIAS is read at a lower rank (see Resolve).
	Alias string
	// Profile names a profile of the AWS shared files given on the
	// command line; AWS_PROFILE is read at a lower rank (see Resolve).
	Profile string
	DataDir string // default "nas-data"
}

// ErrNoCredentials is returned by Resolve when no credentials were found.
var ErrNoCredentials = errors.New("no credentials")

// ErrTwoSources is returned by Resolve when the command line names more
// than one source of credentials (keys, a lease file, an alias, a
// profile): which one was meant is a guess it does not make.
var ErrTwoSources = errors.New("more than one source of credentials")

// found is one source's credentials and the endpoint it names, if any.
type found struct {
	ak, sk, tok, endpoint string
}

// Resolve applies the contract's precedence, first match wins:
//
//  1. --access-key/--secret-key, or --lease-json (which stands in for them);
//  2. --alias NAME;
//  3. --profile NAME (a profile of the AWS shared files);
//  4. the alias $NAS_ALIAS;
//  5. NAS_ACCESS_KEY, NAS_SECRET_KEY, NAS_SESSION_TOKEN;
//  6. the owner's credentials a local `nas serve` generated in the data
//     directory;
//  7. AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
//  8. the AWS shared files' profile $AWS_PROFILE, else "default".
//
// What the shell holds for other S3 services (AWS_*) never shadows what
// was named for the gateway. Key, secret and token always come as a set
// from one source. The endpoint is the --endpoint flag, else the one the
// winning source names (the lease file's, the alias's URL, the profile's
// endpoint_url), else NAS_ENDPOINT, AWS_ENDPOINT_URL or the default. It
// returns the lease file it read, if any.
func Resolve(s Source) (Config, *LeaseFile, error) {
	if n := count(s.AccessKey != "", s.LeaseJSON != "", s.Alias != "", s.Profile != ""); n > 1 {
		return Config{}, nil, fmt.Errorf("%w: give one of --access-key, --lease-json, --alias and --profile", ErrTwoSources)
	}
	var lf *LeaseFile
	if s.LeaseJSON != "" {
		var err error
		if lf, err = ReadLeaseFile(s.LeaseJSON); err != nil {
			return Config{}, nil, err
		}
		s.AccessKey, s.SecretKey, s.SessionToken = lf.AccessKeyID, lf.SecretAccessKey, lf.SessionToken
		if s.Endpoint == "" {
			s.Endpoint = lf.Endpoint
		}
	}
	f, err := pick(s)
	if err != nil {
		return Config{}, nil, err
	}
	if f.ak == "" || f.sk == "" {
		return Config{}, nil, fmt.Errorf("%w: set NAS_ACCESS_KEY and NAS_SECRET_KEY (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), give --access-key and --secret-key, --alias, --profile or --lease-json", ErrNoCredentials)
	}
	ep := cmp.Or(s.Endpoint, f.endpoint, os.Getenv("NAS_ENDPOINT"), os.Getenv("AWS_ENDPOINT_URL"), DefaultEndpoint)
	return Config{Endpoint: strings.TrimSuffix(ep, "/"), Credentials: aws.Credentials{AccessKeyID: f.ak, SecretAccessKey: f.sk, SessionToken: f.tok}}, lf, nil
}

// count is how many of bs are true.
func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// pick returns the credentials of the first source that has them, in
// Resolve's order.
func pick(s Source) (found, error) {
	if s.AccessKey != "" {
		return found{ak: s.AccessKey, sk: s.SecretKey, tok: s.SessionToken}, nil
	}
	if s.Alias != "" {
		return aliasCredentials(s.Alias)
	}
	if s.Profile != "" {
		p, ok, err := loadProfile(s.Profile, true)
		if err == nil && !ok {
			err = fmt.Errorf("AWS profile %q not found in the shared config or credentials file: %w", s.Profile, ErrNoCredentials)
		}
		return found{ak: p.accessKey, sk: p.secretKey, tok: p.sessionToken, endpoint: p.endpoint}, err
	}
	if name := os.Getenv("NAS_ALIAS"); name != "" {
		return aliasCredentials(name)
	}
	if ak := os.Getenv("NAS_ACCESS_KEY"); ak != "" {
		return found{ak: ak, sk: os.Getenv("NAS_SECRET_KEY"), tok: os.Getenv("NAS_SESSION_TOKEN")}, nil
	}
	if ak, sk := dataDirCredentials(s.DataDir); ak != "" {
		return found{ak: ak, sk: sk}, nil
	}
	if ak := os.Getenv("AWS_ACCESS_KEY_ID"); ak != "" {
		return found{ak: ak, sk: os.Getenv("AWS_SECRET_ACCESS_KEY"), tok: os.Getenv("AWS_SESSION_TOKEN")}, nil
	}
	p, _, err := loadProfile(envProfile(), os.Getenv("AWS_PROFILE") != "")
	return found{ak: p.accessKey, sk: p.secretKey, tok: p.sessionToken, endpoint: p.endpoint}, err
}

// aliasCredentials reads the alias name from the user's alias file.
func aliasCredentials(name string) (found, error) {
	path, err := AliasPath()
	if err != nil {
		return found{}, err
	}
	a, err := LookupAlias(path, name)
	if err != nil {
		return found{}, err
	}
	return found{ak: a.AccessKey, sk: a.SecretKey, tok: a.SessionToken, endpoint: a.URL}, nil
}

// dataDirCredentials reads the owner's generated credentials from a data
// directory, so a newcomer's CLI works next to `nas serve`.
func dataDirCredentials(dir string) (string, string) {
	if dir == "" {
		dir = "nas-data"
	}
	b, err := os.ReadFile(filepath.Join(dir, "credentials"))
	if err != nil {
		return "", ""
	}
	var c struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	if json.Unmarshal(b, &c) != nil {
		return "", ""
	}
	return c.AccessKey, c.SecretKey
}

// Client calls one gateway with one set of credentials.
type Client struct {
	cfg    Config
	http   *http.Client
	signer *v4.Signer
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 100 * time.Millisecond
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   128,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 2 * time.Minute,
			// Only an import sends Expect: 100-continue; its refusals
			// (a taken name, a lease) are answered before the body is
			// read, so wait long enough for a loaded gateway to answer
			// rather than start the stream it will reset.
			ExpectContinueTimeout: 5 * time.Second,
		}}
	}
	return &Client{cfg: cfg, http: hc,
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })}
}

// Endpoint returns the gateway's URL.
func (c *Client) Endpoint() string { return c.cfg.Endpoint }

// Credentials returns the credentials the client signs with.
func (c *Client) Credentials() aws.Credentials { return c.cfg.Credentials }

// Temporary reports whether the client holds a lease's temporary
// credentials rather than the owner's.
func (c *Client) Temporary() bool { return c.cfg.Credentials.SessionToken != "" }

// request is one HTTP exchange, rebuilt for every attempt.
type request struct {
	method  string
	url     string
	header  http.Header
	body    func() io.Reader // nil: no body; called once per attempt
	size    int64            // body length
	payload string           // x-amz-content-sha256: a hex SHA-256 or UNSIGNED-PAYLOAD
	retry   bool             // the request may be sent again
}

// do sends r, retrying what a retry may cure, and hands a 2xx response
// to fn (which must read what it needs before returning). A failed
// response becomes an *Error. When fn fails with a retryable transport
// error mid-body, the whole exchange is retried and fn runs again.
func (c *Client) do(ctx context.Context, r request, fn func(*http.Response) error) error {
	pause := c.cfg.Backoff
	var last error
	for attempt := 1; ; attempt++ {
		err := c.once(ctx, r, fn)
		if err == nil {
			return nil
		}
		last = err
		if !r.retry || attempt >= c.cfg.Attempts || !Retryable(err) || ctx.Err() != nil {
			return last
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return last
		case <-t.C:
		}
		pause *= 2
	}
}

func (c *Client) once(ctx context.Context, r request, fn func(*http.Response) error) error {
	var body io.Reader
	if r.body != nil {
		body = r.body()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return fmt.Errorf("bad request URL %q: %w", r.url, err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if r.body != nil {
		req.ContentLength = r.size
		if r.size == 0 {
			req.Body = http.NoBody
		}
	}
	req.Header.Set("x-amz-content-sha256", r.payload)
	if err := c.signer.SignHTTP(ctx, c.cfg.Credentials, req, r.payload, "s3", c.cfg.Region, time.Now()); err != nil {
		return fmt.Errorf("sign %s: %w", r.method, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &Error{Op: r.method + " " + r.url, Code: "Unreachable", Message: err.Error(), Retryable: ctx.Err() == nil, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return parseError(r.method+" "+r.url, resp)
	}
	if fn == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil
	}
	if err := fn(resp); err != nil {
		var ne net.Error
		if ctx.Err() == nil && (errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errShortBody)) {
			return &Error{Op: r.method + " " + r.url, Code: "Unreachable", Message: "the response broke off: " + err.Error(), Retryable: true, err: err}
		}
		return err
	}
	return nil
}

// errShortBody is returned by body readers when a response ends before
// its Content-Length.
var errShortBody = errors.New("response body shorter than announced")

// Do sends req to its control-API operation and decodes the answer into
// resp (nil: discard). Every call carries an idempotency key, so a write
// retried after a lost answer is applied once.
func (c *Client) Do(ctx context.Context, req apiv1.Request, resp any) error {
	return c.call(ctx, req.Op(), req, resp)
}

// call POSTs args to operation op and decodes the answer into out (nil:
// discard; *json.RawMessage: keep it raw).
func (c *Client) call(ctx context.Context, op string, args, out any) error {
	body, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("%s: encode arguments: %w", op, err)
	}
	sum := sha256.Sum256(body)
	r := request{method: http.MethodPost, url: c.cfg.Endpoint + apiv1.Prefix + op,
		header: http.Header{"Content-Type": {"application/json"}, apiv1.IdempotencyHeader: {newIdempotencyKey()}},
		body:   func() io.Reader { return bytes.NewReader(body) }, size: int64(len(body)),
		payload: hex.EncodeToString(sum[:]), retry: true}
	return c.do(ctx, r, func(resp *http.Response) error {
		data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			return err
		}
		if out == nil {
			return nil
		}
		if raw, ok := out.(*json.RawMessage); ok {
			*raw = append((*raw)[:0], data...)
			return nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s: decode answer: %w", op, err)
		}
		return nil
	})
}

// newIdempotencyKey is a fresh idempotency key for one call: the same on
// every retry of the call, so a write the gateway did before the answer
// was lost is not done twice. The gateway ignores it on reads.
func newIdempotencyKey() string {
	var k [12]byte
	rand.Read(k[:])
	return "ik_" + hex.EncodeToString(k[:])
}
