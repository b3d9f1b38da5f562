package s3api

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/lease"

	"github.com/agentnas/nas/branch"
)

type bucketDoc struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion,omitempty"`
}

type listAllMyBucketsResult struct {
	XMLName           xml.Name    `xml:"ListAllMyBucketsResult"`
	Xmlns             string      `xml:"xmlns,attr"`
	Owner             *owner      `xml:"Owner"`
	Buckets           []bucketDoc `xml:"Buckets>Bucket"`
	ContinuationToken string      `xml:"ContinuationToken,omitempty"`
	Prefix            string      `xml:"Prefix,omitempty"`
}

// listBuckets answers ListBuckets: the repositories the caller can see,
// by name, paged by max-buckets (1..10000) and an opaque continuation
// token, optionally only those starting with prefix.
func (s *Server) listBuckets(req *request) error {
	q := req.query
	max, after, err := bucketPage(q)
	if err != nil {
		return err
	}
	repos, err := s.b.ListRepos(req.ctx())
	if err != nil {
		return err
	}
	doc := listAllMyBucketsResult{Xmlns: s3ns, Owner: s.ownerDoc(), Buckets: []bucketDoc{}, Prefix: q.Get("prefix")}
	for _, r := range repos {
		if req.p.Outside(r.Name, "") || r.Name <= after || !strings.HasPrefix(r.Name, doc.Prefix) {
			continue // other repositories do not exist for a lease
		}
		if len(doc.Buckets) == max {
			last := doc.Buckets[max-1].Name
			doc.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(last))
			break
		}
		doc.Buckets = append(doc.Buckets, bucketDoc{Name: r.Name, CreationDate: isoTime(r.Created.UnixNano()), BucketRegion: s.region})
	}
	return s.writeXML(req, http.StatusOK, doc)
}

// bucketPage parses ListBuckets' paging: max-buckets (default 10000) and
// the continuation token, the last name of the previous page.
func bucketPage(q url.Values) (max int, after string, err error) {
	max = 10000
	if v := q.Get("max-buckets"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return 0, "", errInvalidArgument("max-buckets must be an integer from 1 to 10000")
		}
		max = n
	}
	if tok := q.Get("continuation-token"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return 0, "", errInvalidArgument("The continuation token provided is incorrect")
		}
		after = string(b)
	}
	return max, after, nil
}

// requireBranch checks that the addressed repository and branch exist.
func (s *Server) requireBranch(req *request) error {
	if req.branch == "" {
		_, err := s.b.GetRepo(req.ctx(), req.repo)
		return err
	}
	_, err := s.b.GetBranch(req.ctx(), req.repo, req.branch)
	return err
}

func (s *Server) headBucket(req *request) error {
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	if err := s.requireBranch(req); err != nil {
		return err
	}
	req.w.Header().Set("x-amz-bucket-region", s.region)
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) createBucket(req *request) error {
	if !req.p.IsOwner() {
		// Clients create a bucket before writing; the lease's own bucket
		// answers as an existing one would, anything else is refused
		// alike, whether it exists or not.
		if !req.p.Outside(req.repo, req.branch) {
			return toS3(branch.ErrRepoExists) // the owner's, not the lease's
		}
		return s.auth.OwnerOnly(req.ctx(), req.p, "CreateBucket", auth.Target{})
	}
	if req.branch != "" {
		// Clients (rclone) create a bucket before writing to it and accept
		// "already yours": an existing branch answers so.
		if _, err := s.b.GetBranch(req.ctx(), req.repo, req.branch); err == nil {
			return s.alreadyOwned(req)
		}
		return errInvalidBucketName("a branch alias cannot be created with CreateBucket; fork with `nas branch create` (" + aliasExample + ")")
	}
	a, err := s.requestACL(req.r.Header)
	if err != nil {
		return err
	}
	if err := readBody(req, 64<<10, nil); err != nil {
		return err
	}
	_, err = s.b.CreateRepo(req.ctx(), req.repo, branch.CreateRepoOptions{Principal: req.auth.AccessKey})
	if errors.Is(err, branch.ErrRepoExists) {
		return s.alreadyOwned(req) // its ACL stays as it was
	}
	if err != nil {
		return err
	}
	if a != nil {
		if err := s.setBucketACL(req, a); err != nil {
			return err
		}
	}
	req.w.Header().Set("Location", "/"+req.repo)
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

// alreadyOwned answers CreateBucket of a bucket the caller already has as
// S3 does: 200 in us-east-1 (its legacy rule, which clients rely on),
// 409 BucketAlreadyOwnedByYou in every other region. Nothing changes.
func (s *Server) alreadyOwned(req *request) error {
	if s.region != "us-east-1" {
		return toS3(branch.ErrRepoExists)
	}
	req.w.Header().Set("Location", "/"+req.bucket)
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

func (s *Server) deleteBucket(req *request) error {
	if err := s.ownerOnly(req, req.r.Method+" bucket configuration"); err != nil {
		return err
	}
	if req.branch != "" {
		return errMethodNotAllowed("a branch alias cannot be deleted with DeleteBucket; use `nas branch delete`")
	}
	if err := s.b.DeleteRepo(req.ctx(), req.repo); err != nil {
		return err
	}
	req.started = true
	req.w.WriteHeader(http.StatusNoContent)
	return nil
}

type versioningConfiguration struct {
	XMLName xml.Name `xml:"VersioningConfiguration"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Status  string   `xml:"Status,omitempty"`
}

func (s *Server) getVersioning(req *request) error {
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	if err := s.requireBranch(req); err != nil {
		return err
	}
	return s.writeXML(req, http.StatusOK, versioningConfiguration{Xmlns: s3ns, Status: "Enabled"})
}

func (s *Server) putVersioning(req *request) error {
	if err := s.ownerOnly(req, req.r.Method+" bucket configuration"); err != nil {
		return err
	}
	if err := s.requireBranch(req); err != nil {
		return err
	}
	var v versioningConfiguration
	if err := readBody(req, 64<<10, &v); err != nil {
		return err
	}
	switch v.Status {
	case "Enabled":
	case "Suspended":
		// A refusal of this request, not a missing feature: 400, not 501.
		return errInvalidArgument("versioning cannot be suspended here: every write is a version and history is kept as commits")
	default:
		return errMalformedXML("The XML you provided was not well-formed or did not validate against our published schema.")
	}
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

type locationConstraint struct {
	XMLName xml.Name `xml:"LocationConstraint"`
	Xmlns   string   `xml:"xmlns,attr"`
	Region  string   `xml:",chardata"`
}

func (s *Server) getLocation(req *request) error {
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	if err := s.requireBranch(req); err != nil {
		return err
	}
	region := s.region
	if region == "us-east-1" {
		region = ""
	}
	return s.writeXML(req, http.StatusOK, locationConstraint{Xmlns: s3ns, Region: region})
}

// readBody reads a small request body (verifying its signature) and, when
// v is not nil and the body is not empty, decodes it as XML.
func readBody(req *request, limit int64, v any) error {
	b, err := readRaw(req, limit)
	if err != nil {
		return err
	}
	if v == nil || len(b) == 0 {
		return nil
	}
	if err := xml.Unmarshal(b, v); err != nil {
		return errMalformedXML("The XML you provided was not well-formed or did not validate against our published schema.")
	}
	return nil
}

// readRaw reads a small request body, verifying its signature.
func readRaw(req *request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(req.auth.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errMalformedXML("the request body is too large")
	}
	return b, nil
}

// readBodyChecked is readBody for bodies S3 requires an integrity check on
// (Content-MD5 or an x-amz-checksum header), verified when present.
func readBodyChecked(req *request, limit int64, v any) error {
	b, err := readCheckedBody(req, limit)
	if err != nil {
		return err
	}
	if err := xml.Unmarshal(b, v); err != nil {
		return errMalformedXML(msgMalformedXML)
	}
	return nil
}

// readCheckedBody reads a body of at most limit bytes, verifying the
// Content-MD5 or x-amz-checksum the client sent.
func readCheckedBody(req *request, limit int64) ([]byte, error) {
	set, err := checksum.FromRequest(req.r.Header)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	b, err := io.ReadAll(io.TeeReader(io.LimitReader(req.auth.Body, limit+1), set.Writer()))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errMalformedXML("the request body is too large")
	}
	if err := set.Verify(req.auth.Trailer()); err != nil {
		return nil, err
	}
	return b, nil
}

// ownerOnly refuses bucket configuration to leases: AccessDenied for the
// lease's own bucket, NoSuchBucket for any other.
func (s *Server) ownerOnly(req *request, op string) error {
	return s.refusal(req, s.auth.OwnerOnly(req.ctx(), req.p, op, auth.Target{Repo: req.repo, Branch: req.branch}), nil)
}

func noSuchKey() *Error {
	return s3err(http.StatusNotFound, "NoSuchKey", msgNoSuchKey)
}

func noSuchUpload() *Error {
	return toS3(branch.ErrNoSuchUpload)
}
