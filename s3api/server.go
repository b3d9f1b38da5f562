package s3api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	started bool // the response status has been written
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
	start := time.Now()
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
	err := s.serve(req)
	if err != nil {
		s.fail(req, err)
	}
	s.log.Debug("s3", "request_id", req.id, "method", r.Method, "path", r.URL.EscapedPath(),
		"query", r.URL.RawQuery, "dur", time.Since(start), "err", err)
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
	if r.Method == http.MethodOptions {
		// The one request outside the door: a browser sends its CORS
		// preflight without credentials, so it cannot be authenticated.
		// preflight reads the bucket's CORS document and nothing else
		// (no object, no lease, no budget) and answers every refusal
		// alike; an OPTIONS never reaches dispatch.
		return s.preflight(req)
	}
	if boundary, ok := formBoundary(req); ok {
		s.corsHeaders(req, nil)
		return s.postObject(req, boundary)
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
	return s.dispatch(req)
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
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(host)
	vhost := ""
	for _, d := range s.domains {
		if b, ok := strings.CutSuffix(host, "."+d); ok && b != "" {
			vhost = b
			break
		}
	}
	if vhost != "" {
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

func (s *Server) dispatch(req *request) error {
	r, q := req.r, req.query
	for _, sub := range unsupported {
		if q.Has(sub) {
			return errNotImplemented(fmt.Sprintf("the %q subresource is not implemented by this gateway", sub))
		}
	}
	if req.bucket == "" {
		if r.Method == http.MethodGet {
			return s.listBuckets(req)
		}
		return errMethodNotAllowed("The specified method is not allowed against this resource.")
	}
	if err := branch.ValidRepoName(req.repo); err != nil {
		if r.Method == http.MethodPut && !req.hasKey {
			return errInvalidBucketName(err.Error())
		}
		return errNoSuchBucket(req.bucket)
	}
	if !req.hasKey {
		return s.dispatchBucket(req)
	}
	if len(req.key) > 1024 {
		return errKeyTooLong()
	}
	return s.dispatchObject(req)
}

func (s *Server) dispatchBucket(req *request) error {
	r, q := req.r, req.query
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("versioning"):
			return s.getVersioning(req)
		case q.Has("location"):
			return s.getLocation(req)
		case q.Has("acl"):
			return s.getBucketACL(req)
		case q.Has("tagging"):
			return s.getBucketTagging(req)
		case q.Has("cors"):
			return s.getBucketCors(req)
		case q.Has("uploads"):
			return s.listUploads(req)
		case q.Has("versions"):
			return s.listVersions(req)
		case q.Get("list-type") == "2":
			return s.listObjects(req, true)
		}
		return s.listObjects(req, false)
	case http.MethodHead:
		return s.headBucket(req)
	case http.MethodPut:
		switch {
		case q.Has("versioning"):
			return s.putVersioning(req)
		case q.Has("acl"):
			return s.putBucketACL(req)
		case q.Has("tagging"):
			return s.putBucketTagging(req, false)
		case q.Has("cors"):
			return s.putBucketCors(req, false)
		}
		return s.createBucket(req)
	case http.MethodDelete:
		switch {
		case q.Has("tagging"):
			return s.putBucketTagging(req, true)
		case q.Has("cors"):
			return s.putBucketCors(req, true)
		}
		return s.deleteBucket(req)
	case http.MethodPost:
		if q.Has("delete") {
			return s.deleteObjects(req)
		}
		return errInvalidRequest("a POST to a bucket is an upload form (multipart/form-data, signed by its policy, without an Authorization header) or ?delete")
	}
	return errMethodNotAllowed("The specified method is not allowed against this resource.")
}

func (s *Server) dispatchObject(req *request) error {
	r, q := req.r, req.query
	switch r.Method {
	case http.MethodGet:
		switch {
		case q.Has("uploadId"):
			return s.listParts(req)
		case q.Has("acl"):
			return s.getObjectACL(req)
		case q.Has("tagging"):
			return s.getObjectTagging(req)
		case q.Has("attributes"):
			return s.getObjectAttributes(req)
		}
		return s.getObject(req, false)
	case http.MethodHead:
		return s.getObject(req, true)
	case http.MethodPut:
		switch {
		case q.Has("tagging"):
			return s.putObjectTagging(req, false)
		case q.Has("uploadId") || q.Has("partNumber"):
			if r.Header.Get("x-amz-copy-source") != "" {
				return s.uploadPartCopy(req)
			}
			return s.uploadPart(req)
		case q.Has("acl"):
			return s.putObjectACL(req)
		case r.Header.Get("x-amz-copy-source") != "":
			return s.copyObject(req)
		}
		return s.putObject(req)
	case http.MethodDelete:
		switch {
		case q.Has("tagging"):
			return s.putObjectTagging(req, true)
		case q.Has("uploadId"):
			return s.abortUpload(req)
		}
		return s.deleteObject(req)
	case http.MethodPost:
		switch {
		case q.Has("uploads"):
			return s.createUpload(req)
		case q.Has("uploadId"):
			return s.completeUpload(req)
		}
		return errNotImplemented("this POST operation is not implemented")
	}
	return errMethodNotAllowed("The specified method is not allowed against this resource.")
}

// ctx returns the request's context, cancelled when the client goes away.
func (req *request) ctx() context.Context { return req.r.Context() }

// isNotFound reports whether err is any not-found.
func isNotFound(err error) bool { return errors.Is(err, branch.ErrNotFound) }
