package s3api

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/postform"
	"github.com/agentnas/nas/sigv4"
)

// POST Object: a browser form (multipart/form-data) whose fields carry
// the key, the object's headers and a policy signed with the owner's or
// a lease's credentials. The door authenticates the form
// (AuthenticatePost); the write is then authorized, charged and staged
// as a PUT is.

// formBoundary returns the multipart boundary of a browser form upload:
// a POST to a bucket, without a key, a query or an Authorization header,
// of multipart/form-data. Every other request authenticates through
// Authenticate.
func formBoundary(req *request) (string, bool) {
	r := req.r
	if r.Method != http.MethodPost || req.bucket == "" || req.hasKey || r.URL.RawQuery != "" {
		return "", false
	}
	if _, signed := r.Header["Authorization"]; signed {
		return "", false
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return "", false
	}
	return params["boundary"], true
}

// postObject answers POST Object: the form's fields are read (bounded),
// its signature authenticated by the door, and its file stored.
func (s *Server) postObject(req *request, boundary string) error {
	form, err := postform.Read(req.r.Body, boundary)
	if err != nil {
		return err
	}
	p, err := s.auth.AuthenticatePost(req.r, formSignature(form))
	if p != nil {
		req.p, req.auth = p, p.Signed
		defer s.auth.Finish(req.ctx(), p)
		s.budgetHeaders(req)
	}
	if err != nil {
		return err
	}
	if err := branch.ValidRepoName(req.repo); err != nil {
		return errNoSuchBucket(req.bucket)
	}
	if req.branch != "" {
		if err := branch.ValidBranchName(req.branch); err != nil {
			return errInvalidArgument(err.Error())
		}
	}
	req.branch = p.Branch(req.repo, req.branch)
	return s.storeForm(req, form)
}

// formSignature is what the form claims about its signature. A form
// signed with Signature Version 2 (AWSAccessKeyId, signature) is named
// so (Algorithm "AWS"), for the door to verify it as such.
func formSignature(f *postform.Form) sigv4.PostForm {
	sf := sigv4.PostForm{
		Algorithm: f.Value("x-amz-algorithm"), Credential: f.Value("x-amz-credential"), Date: f.Value("x-amz-date"),
		Signature: f.Value("x-amz-signature"), SecurityToken: f.Value("x-amz-security-token"), Policy: f.Value("policy"),
	}
	if _, v2 := f.Lookup("awsaccesskeyid"); v2 && sf.Algorithm == "" {
		sf.Algorithm, sf.AccessKeyID, sf.Signature = "AWS", f.Value("awsaccesskeyid"), f.Value("signature")
	}
	return sf
}

// storeForm checks the form against its policy and stores its file as a
// new version of its key, held to the lease as a PUT is.
func (s *Server) storeForm(req *request, form *postform.Form) error {
	pol, err := s.formPolicy(req, form)
	if err != nil {
		return err
	}
	h := formHeader(form)
	e, domain, err := s.prepareWrite(req, h)
	if err != nil {
		return err
	}
	in, charge, err := s.ingestForm(req, form, pol, h, domain)
	if err != nil {
		return err
	}
	defer in.up.Close()
	stored, err := s.stage(req, e, in)
	if err != nil {
		charge.Refund(req.ctx())
		return err
	}
	return s.answerForm(req, form, stored)
}

// formPolicy finds the form's key and checks the form against its
// policy, which the door has proved the signer wrote.
func (s *Server) formPolicy(req *request, form *postform.Form) (*postform.Policy, error) {
	if err := form.Require("key"); err != nil {
		return nil, err
	}
	key := form.Key()
	if len(key) > 1024 {
		return nil, errKeyTooLong()
	}
	if !utf8.ValidString(key) {
		return nil, errKeyNotUTF8()
	}
	pol, err := postform.Decode(form.Value("policy"))
	if err != nil {
		return nil, err
	}
	if err := pol.Check(req.p.Now(), form, req.bucket, key); err != nil {
		return nil, err
	}
	req.key, req.hasKey = key, true
	return pol, nil
}

// formHeader returns the form's fields that a PUT would send as headers:
// the stored content headers, the canned ACL (acl, as x-amz-acl), user
// metadata, checksums and the headers
// the gateway refuses (encryption, object lock, website redirects).
func formHeader(f *postform.Form) http.Header {
	h := http.Header{}
	for _, fd := range f.Fields {
		switch n := fd.Name; {
		case n == "acl":
			h.Set("x-amz-acl", fd.Value)
		case n == "content-type", n == "content-md5", n == "x-amz-website-redirect-location",
			strings.HasPrefix(n, "x-amz-meta-"), strings.HasPrefix(n, "x-amz-checksum-"),
			strings.HasPrefix(n, "x-amz-server-side-encryption"), strings.HasPrefix(n, "x-amz-object-lock-"):
			h.Set(n, fd.Value)
		default:
			for _, name := range storedHeaders {
				if strings.EqualFold(n, name) {
					h.Set(n, fd.Value)
				}
			}
		}
	}
	return h
}

// ingestForm streams the form's file into the chunk store. A form
// declares no length, so the write budget is reserved up to what is left
// (at most the policy's maximum, 5 GiB and the request's length), the
// file is read to at most one byte more, and the charge settled at the
// file's size; the policy's content-length-range is checked before
// anything is synced.
func (s *Server) ingestForm(req *request, form *postform.Form, pol *postform.Policy, h http.Header, domain string) (*ingested, *auth.Charge, error) {
	bound := int64(maxPutSize)
	if pol.HasLength {
		bound = min(bound, pol.MaxLength)
	}
	if n := req.r.ContentLength; n >= 0 {
		bound = min(bound, n)
	}
	set, err := checksum.FromRequest(h)
	if err != nil {
		return nil, nil, err
	}
	defer set.Close()
	charge, err := s.auth.WriteUpTo(req.ctx(), req.p, auth.Target{Repo: req.repo, Branch: req.branch, Key: req.key}, bound)
	if err != nil {
		return nil, nil, err
	}
	body := io.LimitReader(formFile{form.File}, charge.Reserved()+1)
	in, err := s.ingestBody(req, body, -1, set, domain, func(n int64) error {
		if err := formLength(req.ctx(), n, bound, pol, charge); err != nil {
			return err
		}
		return set.Verify(nil)
	})
	if err != nil {
		charge.Refund(req.ctx())
		return nil, nil, err
	}
	s.budgetHeaders(req)
	return in, charge, nil
}

// formLength checks the file's n bytes against the bound, the lease's
// reservation and the policy's content-length-range.
func formLength(ctx context.Context, n, bound int64, pol *postform.Policy, charge *auth.Charge) error {
	if n > bound {
		if pol.HasLength && bound == pol.MaxLength {
			return pol.CheckLength(n)
		}
		return errEntityTooLarge(fmt.Sprintf("Your proposed upload exceeds the maximum allowed size of %d bytes.", int64(maxPutSize)))
	}
	if err := charge.Settle(ctx, n); err != nil {
		return err
	}
	return pol.CheckLength(n)
}

// formFile is the form's file part; a form that ends before the file's
// closing boundary is an incomplete body, never a shorter object (the
// chunk store treats io.ErrUnexpectedEOF as a short read's end).
type formFile struct{ r io.Reader }

func (f formFile) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = errIncompleteBody("The form ended before its file's closing boundary.")
	}
	return n, err
}

// postResponse is the PostResponse document (success_action_status 201).
type postResponse struct {
	XMLName  xml.Name `xml:"PostResponse"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// answerForm answers a stored form: a 303 to success_action_redirect (or
// redirect) with bucket, key and etag added to its query, else the
// success_action_status (200, 201 with a PostResponse, 204 by default).
func (s *Server) answerForm(req *request, form *postform.Form, stored *manifest.Entry) error {
	h := req.w.Header()
	etag := quote(stored.ETag)
	h.Set("ETag", etag)
	h.Set("x-amz-version-id", stored.VersionID)
	setChecksumHeaders(h, stored)
	loc := objectURL(req)
	h.Set("Location", loc)
	status := http.StatusNoContent
	if to, ok := redirectTarget(form, req.bucket, req.key, etag); ok {
		h.Set("Location", to)
		status = http.StatusSeeOther
	} else {
		switch form.Value("success_action_status") {
		case "200":
			status = http.StatusOK
		case "201":
			return s.writeXML(req, http.StatusCreated, postResponse{Location: loc, Bucket: req.bucket, Key: req.key, ETag: etag})
		}
	}
	s.auth.Finish(req.ctx(), req.p)
	req.started = true
	req.w.WriteHeader(status)
	return nil
}

// redirectTarget is the URL a form asks to be sent to, with the upload's
// bucket, key and etag appended; an absent or non-absolute http(s) URL
// is no redirect, as in S3.
func redirectTarget(form *postform.Form, bucket, key, etag string) (string, bool) {
	v := form.Value("success_action_redirect")
	if v == "" {
		v = form.Value("redirect")
	}
	u, err := url.Parse(v)
	if v == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	q := "bucket=" + url.QueryEscape(bucket) + "&key=" + url.QueryEscape(key) + "&etag=" + url.QueryEscape(etag)
	if u.RawQuery != "" {
		q = u.RawQuery + "&" + q
	}
	u.RawQuery = q
	return u.String(), true
}

// objectURL is the stored object's URL, as the request addressed it.
func objectURL(req *request) string {
	u := url.URL{Scheme: "http", Host: req.r.Host, Path: "/" + req.bucket + "/" + req.key}
	if req.r.TLS != nil {
		u.Scheme = "https"
	}
	if req.vhost {
		u.Path = "/" + req.key
	}
	return u.String()
}
