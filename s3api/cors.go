package s3api

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cors"
	"github.com/agentnas/nas/manifest"
)

// corsDoc is the repository configuration document of bucket CORS: the
// canonical CORSConfiguration (cors.Config.Encode).
const corsDoc = "cors"

func errNoSuchCORSConfiguration() *Error {
	return s3err(http.StatusNotFound, "NoSuchCORSConfiguration", "The CORS configuration does not exist")
}

// errCORSNotAllowed is S3's answer to a preflight that no rule admits, in
// its words (typo included). A missing bucket and a bucket without CORS
// get it too, so a preflight, which anyone may send, tells nothing apart.
func errCORSNotAllowed() *Error {
	return s3err(http.StatusForbidden, "AccessForbidden", "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.")
}

func errBadRequest(msg string) *Error { return s3err(http.StatusBadRequest, "BadRequest", msg) }

// getBucketCors answers GetBucketCors; a bucket without CORS is
// NoSuchCORSConfiguration, as on S3.
func (s *Server) getBucketCors(req *request) error {
	if err := s.bucketConfig(req); err != nil {
		return err
	}
	b, err := s.b.RepoConfig(req.ctx(), req.repo, corsDoc)
	if errors.Is(err, branch.ErrNoSuchConfig) {
		return errNoSuchCORSConfiguration()
	}
	if err != nil {
		return err
	}
	c, err := cors.Decode(b)
	if err != nil {
		return fmt.Errorf("bucket cors of %s: %w", req.repo, manifest.ErrCorrupt)
	}
	c.Xmlns = s3ns
	return s.writeXML(req, http.StatusOK, c)
}

// putBucketCors answers PutBucketCors, and DeleteBucketCors when del is
// set.
func (s *Server) putBucketCors(req *request, del bool) error {
	if err := s.bucketConfig(req); err != nil {
		return err
	}
	status := http.StatusOK
	if del {
		status = http.StatusNoContent
		if err := s.b.DeleteRepoConfig(req.ctx(), req.repo, corsDoc); err != nil {
			return err
		}
	} else if err := s.storeBucketCors(req); err != nil {
		return err
	}
	req.started = true
	req.w.WriteHeader(status)
	return nil
}

// storeBucketCors reads the request's CORSConfiguration (at most 64 KiB,
// Content-MD5 or a checksum honoured if sent), checks it and stores its
// canonical form.
func (s *Server) storeBucketCors(req *request) error {
	body, err := readCheckedBody(req, branch.MaxRepoConfig)
	if err != nil {
		return err
	}
	c, err := cors.Decode(body)
	if err != nil {
		return err
	}
	doc, err := c.Encode()
	if err != nil {
		return err
	}
	return s.b.SetRepoConfig(req.ctx(), req.repo, corsDoc, doc)
}

// bucketCORS returns repo's CORS configuration: nil when it has none, and
// nil too when there is no such repository, so that a preflight cannot
// tell the two apart.
func (s *Server) bucketCORS(req *request) (*cors.Config, error) {
	if req.repo == "" || branch.ValidRepoName(req.repo) != nil {
		return nil, nil
	}
	b, err := s.b.RepoConfig(req.ctx(), req.repo, corsDoc)
	switch {
	case errors.Is(err, branch.ErrNoSuchConfig), errors.Is(err, branch.ErrNoSuchRepo):
		return nil, nil
	case err != nil:
		return nil, err
	}
	c, err := cors.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("bucket cors of %s: %w", req.repo, manifest.ErrCorrupt)
	}
	return c, nil
}

// preflight answers an OPTIONS request: the one request that does not
// pass the door, because a browser sends its preflight without
// credentials. It reads the bucket's CORS document and nothing else, and
// its refusal is the same whether the bucket is missing, has no CORS or
// has no matching rule. Credentials it carries are ignored.
func (s *Server) preflight(req *request) error {
	h := req.r.Header
	origin, method := h.Get("Origin"), h.Get("Access-Control-Request-Method")
	if origin == "" {
		return errBadRequest("Insufficient information. Origin request header needed.")
	}
	if !slices.Contains(cors.Methods, method) {
		return errBadRequest("Invalid Access-Control-Request-Method: " + cmp.Or(method, "null"))
	}
	c, err := s.bucketCORS(req)
	if err != nil {
		return err
	}
	headers := cors.RequestHeaders(strings.Join(h.Values("Access-Control-Request-Headers"), ","))
	m, ok := c.Match(cors.Request{Origin: origin, Method: method, Headers: headers})
	if !ok {
		return errCORSNotAllowed()
	}
	m.Preflight(req.w.Header())
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

// corsHeaders adds the bucket's CORS headers to the answer of a request
// that carries an Origin, errors included (writeError keeps them), so a
// page at an allowed origin can read what it gets. p is who the request
// acts as (nil when the door refused it or has not been asked yet): a
// lease gets nothing for a bucket outside its world. What an
// unauthenticated request learns here, a preflight tells anyone.
func (s *Server) corsHeaders(req *request, p *auth.Principal) {
	origin := req.r.Header.Get("Origin")
	if origin == "" || p != nil && p.Outside(req.repo, "") {
		return
	}
	c, err := s.bucketCORS(req)
	if err != nil {
		s.log.Warn("bucket cors unreadable; answering without CORS headers", "request_id", req.id, "repo", req.repo, "err", err)
		return
	}
	// As Ceph RGW (and the s3-tests suite) do, an
	// Access-Control-Request-Method names the method to match; a browser
	// never sends one on the request itself.
	method := cmp.Or(req.r.Header.Get("Access-Control-Request-Method"), req.r.Method)
	if m, ok := c.Match(cors.Request{Origin: origin, Method: method}); ok {
		m.Actual(req.w.Header())
	}
}
