package s3api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// aclDoc is the repository configuration document of a bucket's ACL
// (acl.Encode); a bucket without one is private.
const aclDoc = "acl"

// ownerName is the display name of the owner, in every Owner element and
// in grants to the owner's canonical ID.
const ownerName = "owner"

const xsiNS = "http://www.w3.org/2001/XMLSchema-instance"

func errMalformedACL() *Error {
	return s3err(http.StatusBadRequest, "MalformedACLError", "The XML you provided was not well-formed or did not validate against our published schema")
}

func errMissingSecurityHeader() *Error {
	return s3err(http.StatusBadRequest, "MissingSecurityHeader", "Your request was missing a required header: x-amz-acl, x-amz-grant-* or an AccessControlPolicy body")
}

// accessControlPolicy is the AccessControlPolicy document GET ?acl answers.
type accessControlPolicy struct {
	XMLName xml.Name   `xml:"AccessControlPolicy"`
	Xmlns   string     `xml:"xmlns,attr"`
	Owner   *owner     `xml:"Owner"`
	Grants  []grantDoc `xml:"AccessControlList>Grant"`
}

type grantDoc struct {
	Grantee    granteeDoc `xml:"Grantee"`
	Permission string     `xml:"Permission"`
}

type granteeDoc struct {
	XMLNSxsi     string `xml:"xmlns:xsi,attr"`
	Type         string `xml:"xsi:type,attr"`
	ID           string `xml:"ID,omitempty"`
	DisplayName  string `xml:"DisplayName,omitempty"`
	URI          string `xml:"URI,omitempty"`
	EmailAddress string `xml:"EmailAddress,omitempty"`
}

// policyIn is an AccessControlPolicy request body. The grantee's type is
// the xsi:type attribute, read from the attributes as the decoder names
// them (namespace URL, local name).
type policyIn struct {
	XMLName xml.Name `xml:"AccessControlPolicy"`
	Owner   *owner   `xml:"Owner"`
	Grants  []struct {
		Grantee struct {
			Attrs        []xml.Attr `xml:",any,attr"`
			ID           string     `xml:"ID"`
			URI          string     `xml:"URI"`
			EmailAddress string     `xml:"EmailAddress"`
		} `xml:"Grantee"`
		Permission string `xml:"Permission"`
	} `xml:"AccessControlList>Grant"`
}

// decodePolicy decodes an AccessControlPolicy body into the ACL it sets,
// unchecked: MalformedACLError for XML that is not one, AccessDenied for
// an Owner other than the owner.
func decodePolicy(b []byte, ownerID string) (acl.ACL, error) {
	var doc policyIn
	if err := xml.Unmarshal(b, &doc); err != nil {
		return acl.ACL{}, errMalformedACL()
	}
	if doc.Owner != nil && doc.Owner.ID != ownerID {
		return acl.ACL{}, errAccessDenied("Access Denied: the Owner of an ACL must be the bucket's owner")
	}
	a := acl.ACL{Grants: make([]acl.Grant, 0, len(doc.Grants))}
	for _, g := range doc.Grants {
		p, ok := acl.ParsePermission(g.Permission)
		var kind acl.Kind
		for _, at := range g.Grantee.Attrs {
			if at.Name.Local == "type" && (at.Name.Space == xsiNS || at.Name.Space == "xsi") {
				kind, _ = acl.ParseKind(at.Value)
			}
		}
		if !ok || kind == 0 {
			return acl.ACL{}, errMalformedACL()
		}
		ge := acl.Grantee{Kind: kind, ID: g.Grantee.ID, URI: g.Grantee.URI, Email: g.Grantee.EmailAddress}
		a.Grants = append(a.Grants, acl.Grant{Grantee: ge, Permission: p})
	}
	return a, nil
}

// headerACL is the ACL a request's headers set: x-amz-acl (canned) or
// the x-amz-grant-* headers, not both; set is false when it has none.
func (s *Server) headerACL(h http.Header) (acl.ACL, bool, error) {
	var a acl.ACL
	for _, gh := range acl.GrantHeaders {
		if v := h.Get(gh.Name); v != "" {
			gs, err := acl.ParseGrantHeader(v, gh.Permission)
			if err != nil {
				return acl.ACL{}, false, err
			}
			a.Grants = append(a.Grants, gs...)
		}
	}
	canned := h.Get("x-amz-acl")
	switch {
	case canned != "" && a.Grants != nil:
		return acl.ACL{}, false, errInvalidRequest("Specifying both Canned ACLs and Header Grants is not allowed")
	case canned != "":
		a, err := acl.Canned(canned, s.ownerID)
		return a, true, err
	case a.Grants == nil:
		return a, false, nil
	}
	return a, true, a.Check(s.ownerID)
}

// requestACL is the ACL a new object or bucket gets from its request's
// headers, as it is stored: nil for none, or private.
func (s *Server) requestACL(h http.Header) (*acl.ACL, error) {
	a, set, err := s.headerACL(h)
	if err != nil || !set {
		return nil, err
	}
	return s.stored(a), nil
}

// stored is a as it is kept: nil when it is private, the answer for
// everything that has no ACL.
func (s *Server) stored(a acl.ACL) *acl.ACL {
	if a.IsPrivate(s.ownerID) {
		return nil
	}
	return &a
}

// putACLOf reads the ACL a PutObjectAcl or PutBucketAcl sets: from its
// headers or its body, not both.
func (s *Server) putACLOf(req *request) (*acl.ACL, error) {
	a, set, err := s.headerACL(req.r.Header)
	if err != nil {
		return nil, err
	}
	b, err := readRaw(req, 64<<10)
	if err != nil {
		return nil, err
	}
	switch {
	case set && len(b) > 0:
		return nil, errInvalidRequest("Specifying both an ACL in the headers and an AccessControlPolicy body is not allowed")
	case !set && len(b) == 0:
		return nil, errMissingSecurityHeader()
	case !set:
		if a, err = decodePolicy(b, s.ownerID); err != nil {
			return nil, err
		}
		if err := a.Check(s.ownerID); err != nil {
			return nil, err
		}
	}
	return s.stored(a), nil
}

// policyOf is the AccessControlPolicy document of a stored ACL.
func (s *Server) policyOf(a *acl.ACL) accessControlPolicy {
	if a == nil {
		p := acl.Private(s.ownerID)
		a = &p
	}
	doc := accessControlPolicy{Xmlns: s3ns, Owner: s.ownerDoc(), Grants: []grantDoc{}}
	for _, g := range a.Grants {
		ge := granteeDoc{XMLNSxsi: xsiNS, Type: g.Grantee.Kind.String(), ID: g.Grantee.ID, URI: g.Grantee.URI, EmailAddress: g.Grantee.Email}
		switch {
		case g.Grantee.Kind != acl.CanonicalUser:
		case ge.ID == s.ownerID:
			ge.DisplayName = ownerName
		case ge.ID == acl.EC2ID:
			ge.DisplayName = acl.EC2Name
		}
		doc.Grants = append(doc.Grants, grantDoc{Grantee: ge, Permission: g.Permission.String()})
	}
	return doc
}

// getObjectACL answers GetObjectAcl: the ACL of the current version, or
// of versionId, as it was set. It is authorized as reading the object.
func (s *Server) getObjectACL(req *request) error {
	e, err := s.readVersion(req)
	if err != nil {
		return err
	}
	return s.writeXML(req, http.StatusOK, s.policyOf(e.ACL))
}

// putObjectACL answers PutObjectAcl: the version gets the new ACL,
// keeping its bytes and version ID, as tags do (see
// branch.Service.SetACL for which versions can). It is authorized as
// writing the object; the ACL itself admits no one.
func (s *Server) putObjectACL(req *request) error {
	if err := s.allow(req, lease.Write, req.repo, req.branch, req.key, noSuchKey()); err != nil {
		return err
	}
	a, err := s.putACLOf(req)
	if err != nil {
		return err
	}
	vid, err := s.taggedVersion(req)
	if err != nil {
		return err
	}
	e, err := s.b.SetACL(req.ctx(), req.repo, req.branch, req.key, vid, a, req.p.Writer())
	if err != nil {
		return err
	}
	return answerRetouched(req, e, http.StatusOK)
}

// getBucketACL answers GetBucketAcl for whoever may list the bucket.
func (s *Server) getBucketACL(req *request) error {
	if err := s.allow(req, lease.List, req.repo, req.branch, "", nil); err != nil {
		return err
	}
	if err := s.requireBranch(req); err != nil {
		return err
	}
	a, err := s.bucketACL(req)
	if err != nil {
		return err
	}
	return s.writeXML(req, http.StatusOK, s.policyOf(a))
}

// bucketACL is the stored ACL of the addressed bucket; nil when private.
func (s *Server) bucketACL(req *request) (*acl.ACL, error) {
	b, err := s.b.RepoConfig(req.ctx(), req.repo, aclDoc)
	if errors.Is(err, branch.ErrNoSuchConfig) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a, err := acl.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("bucket ACL of %s: %w: %w", req.repo, manifest.ErrCorrupt, err)
	}
	return &a, nil
}

// putBucketACL answers PutBucketAcl, the owner's only.
func (s *Server) putBucketACL(req *request) error {
	if err := s.bucketConfig(req); err != nil {
		return err
	}
	a, err := s.putACLOf(req)
	if err != nil {
		return err
	}
	if err := s.setBucketACL(req, a); err != nil {
		return err
	}
	req.started = true
	req.w.WriteHeader(http.StatusOK)
	return nil
}

// setBucketACL stores a as the addressed bucket's ACL; nil removes it.
func (s *Server) setBucketACL(req *request, a *acl.ACL) error {
	if a == nil {
		return s.b.DeleteRepoConfig(req.ctx(), req.repo, aclDoc)
	}
	return s.b.SetRepoConfig(req.ctx(), req.repo, aclDoc, acl.Encode(*a))
}
