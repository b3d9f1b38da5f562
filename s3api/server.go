package s3api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/sigv4"
	"github.com/agentnas/nas/source"
)

// Config configures a Server.
type Config struct {
	Branches *branch.Service
	// Auth is the door: every request is authenticated and every
	// operation authorized, charged and recorded through it.
	Auth *auth.Authority
	// OwnerKey is the owner's access key (it names the owner in ACL
	// documents).
	OwnerKey string
	// Region is reported by GetBucketLocation; requests may be signed for
	// any region.
	Region string
	// Domains enables virtual-host style: a Host of "BUCKET.DOMAIN" (port
	// ignored) addresses BUCKET.
	Domains []string
	Log     *slog.Logger
	// Lazy, when set, serves lazy entries (attached sources); without it
	// reading one answers ServiceUnavailable.
	Lazy *source.Materializer
	// MaxLargeBodies bounds the bodies over cas.ChunkMin ingested at
	// once, each holding up to LargeBodyMemory of buffers; more wait
	// (0: DefaultMaxLargeBodies).
	MaxLargeBodies int
}

// Server is the S3 endpoint. It implements http.Handler.
type Server struct {
	b       *branch.Service
	ms      *manifest.Store
	chunks  *cas.Store
	auth    *auth.Authority
	ownerID string
	region  string
	domains []string
	log     *slog.Logger
	lazy    *source.Materializer
	admit   *admission // the ceiling on large bodies ingested at once
}

// New returns a Server.
func New(c Config) *Server {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	sum := sha256.Sum256([]byte("agentnas owner " + c.OwnerKey))
	return &Server{
		b: c.Branches, ms: c.Branches.Manifest(), chunks: c.Branches.Chunks(), auth: c.Auth,
		ownerID: hex.EncodeToString(sum[:]), region: c.Region, domains: c.Domains, log: c.Log, lazy: c.Lazy,
		admit: newAdmission(c.MaxLargeBodies),
	}
}

// request is one parsed S3 request.
type request struct {
	w       http.ResponseWriter
	r       *http.Request
	id      string
	p       *auth.Principal // who the request acts as
	auth    *sigv4.Result   // what its signature proved (p.Signed)
	bucket  string          // as addressed (may be an alias)
	repo    string
	branch  string // "" means the repository's default
	key     string
	hasKey  bool
	vhost   bool // the bucket was named by the Host header
	query   url.Values
	op      string // the S3 operation (route), "" until parsed
	started bool   // the response status has been written
}

func newRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &request{w: w, r: r, id: newRequestID()}
	h := w.Header()
	h.Set("x-amz-request-id", req.id)
	h.Set("x-amz-id-2", req.id)
	h.Set("Server", "AgentNAS")
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("panic in s3 handler", "request_id", req.id, "method", r.Method, "path", r.URL.EscapedPath(), "panic", v)
			if !req.started {
				s.writeError(req, errInternal())
			}
		}
	}()
	defer s.describe(req)
	if err := s.serve(req); err != nil {
		s.fail(req, err)
	}
}

// describe tells the access log what req was and who sent it.
func (s *Server) describe(req *request) {
	e := access.From(req.ctx())
	e.API, e.Operation, e.RequestID = access.S3, req.op, req.id
	if e.Operation == "" {
		e.Operation = opUnknown
	}
	e.Repo, e.Branch = req.repo, req.branch
	if req.p != nil {
		e.Principal = req.p.Name()
	}
}

// fail answers with err, or aborts the connection when a response is
// already under way (so a client never mistakes a truncated body for
// success).
func (s *Server) fail(req *request, err error) {
	e := toS3(err)
	if e.Status >= 500 && e.Code != "RequestCanceled" {
		s.log.Error("s3 request failed", "request_id", req.id, "method", req.r.Method,
			"path", req.r.URL.EscapedPath(), "err", err)
	}
	if req.started {
		panic(http.ErrAbortHandler)
	}
	s.writeError(req, e)
}

func (s *Server) serve(req *request) error {
	r := req.r
	if err := s.parseTarget(req); err != nil {
		return err
	}
	rt := s.route(req)
	req.op = rt.op
	if rt.outside {
		return rt.serve(req)
	}
	p, err := s.auth.Authenticate(r, auth.S3)
	s.corsHeaders(req, p)
	if p != nil {
		req.p, req.auth = p, p.Signed
		defer s.auth.Finish(req.ctx(), p)
		defer p.Signed.Body.Close()
		s.budgetHeaders(req) // a spent budget says what is left too
	}
	if err != nil {
		return err
	}
	if v := r.Header.Get("x-nas-branch"); v != "" {
		// The door refused the header unless the signature covers it.
		if req.branch != "" && req.branch != v {
			return errInvalidArgument("x-nas-branch and the bucket alias name different branches")
		}
		req.branch = v
	}
	if req.branch != "" {
		if err := branch.ValidBranchName(req.branch); err != nil {
			return errInvalidArgument(err.Error())
		}
	}
	req.branch = p.Branch(req.repo, req.branch)
	return s.dispatch(req, rt)
}

// parseTarget finds bucket and key from the Host header and the raw path.
func (s *Server) parseTarget(req *request) error {
	r := req.r
	// The path exactly as sent (the signature covers it in this form); the
	// parsed URL may have been normalized.
	raw, _, _ := strings.Cut(r.RequestURI, "?")
	if !strings.HasPrefix(raw, "/") {
		raw = r.URL.EscapedPath()
	}
	if !strings.HasPrefix(raw, "/") {
		return errInvalidRequest("request path must start with /")
	}
	path, err := url.PathUnescape(raw[1:])
	if err != nil {
		return errInvalidArgument("malformed percent-encoding in the request path")
	}
	req.query = r.URL.Query()
	if vhost := sigv4.VirtualHostBucket(r.Host, s.domains); vhost != "" {
		req.bucket, req.vhost = vhost, true
		req.key, req.hasKey = path, path != ""
	} else {
		b, k, ok := strings.Cut(path, "/")
		req.bucket = b
		req.key, req.hasKey = k, ok && k != ""
	}
	if req.bucket != "" {
		req.repo, req.branch = ParseAlias(req.bucket)
	}
	return nil
}

// unsupported lists subresources we answer with NotImplemented without
// touching data.
var unsupported = []string{
	"accelerate", "analytics", "encryption", "intelligent-tiering",
	"inventory", "legal-hold", "lifecycle", "logging", "metadataTable", "metrics", "notification",
	"object-lock", "ownershipControls", "policy", "policyStatus", "publicAccessBlock",
	"replication", "requestPayment", "restore", "retention", "select",
	"torrent", "website", "renameObject", "session",
}

// dispatch checks the target of a route that needs one, then serves it.
func (s *Server) dispatch(req *request, rt route) error {
	if rt.target {
		if err := branch.ValidRepoName(req.repo); err != nil {
			if req.r.Method == http.MethodPut && !req.hasKey {
				return errInvalidBucketName(err.Error())
			}
			return errNoSuchBucket(req.bucket)
		}
		if req.hasKey && len(req.key) > 1024 {
			return errKeyTooLong()
		}
		if req.hasKey && writesKey(req.r.Method) && !utf8.ValidString(req.key) {
			return errKeyNotUTF8()
		}
	}
	return rt.serve(req)
}

// writesKey reports whether a request with this method may create the
// addressed key (PUT, a copy's destination, a multipart upload's POST).
// Reads and deletes of a key that is not UTF-8 pass: none can be written
// now, but one stored by an earlier version must stay removable.
func writesKey(method string) bool {
	return method == http.MethodPut || method == http.MethodPost
}

// ctx returns the request's context, cancelled when the client goes away.
func (req *request) ctx() context.Context { return req.r.Context() }

// isNotFound reports whether err is any not-found.
func isNotFound(err error) bool { return errors.Is(err, branch.ErrNotFound) }
