package s3api

import (
	"encoding/xml"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/agentnas/nas/acl"
)

const testOwner = "0wner1d"

func policyXML(owner, grants string) []byte {
	o := ""
	if owner != "" {
		o = "<Owner><ID>" + owner + "</ID><DisplayName>x</DisplayName></Owner>"
	}
	return []byte(`<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + o + `<AccessControlList>` + grants + `</AccessControlList></AccessControlPolicy>`)
}

func xmlGrant(typ, inner, perm string) string {
	return `<Grant><Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="` + typ + `">` + inner + `</Grantee><Permission>` + perm + `</Permission></Grant>`
}

func TestDecodePolicy(t *testing.T) {
	b := policyXML(testOwner, xmlGrant("CanonicalUser", "<ID>"+testOwner+"</ID>", "READ_ACP")+xmlGrant("Group", "<URI>"+acl.AllUsers+"</URI>", "WRITE"))
	a, err := decodePolicy(b, testOwner)
	want := []acl.Grant{{Grantee: acl.User(testOwner), Permission: acl.ReadACP}, {Grantee: acl.GroupOf(acl.AllUsers), Permission: acl.Write}}
	if err != nil || !slices.Equal(a.Grants, want) {
		t.Fatalf("decodePolicy = %+v, %v", a, err)
	}
	if a, err := decodePolicy(policyXML("", ""), testOwner); err != nil || a.Grants == nil || len(a.Grants) != 0 {
		t.Fatalf("no grants: %+v, %v (want an empty, not a missing, ACL)", a, err)
	}
	for _, tc := range []struct {
		body []byte
		code string
	}{
		{[]byte("<AccessControlPolicy"), "MalformedACLError"},
		{[]byte("<Tagging></Tagging>"), "MalformedACLError"},
		{policyXML(testOwner, xmlGrant("CanonicalUser", "<ID>x</ID>", "EVERYTHING")), "MalformedACLError"},
		{policyXML(testOwner, xmlGrant("Robot", "<ID>x</ID>", "READ")), "MalformedACLError"},
		{policyXML("someone-else", ""), "AccessDenied"},
	} {
		_, err := decodePolicy(tc.body, testOwner)
		if got := toS3(err).Code; err == nil || got != tc.code {
			t.Errorf("decodePolicy(%s) = %v, want %s", tc.body, err, tc.code)
		}
	}
}

func TestHeaderACL(t *testing.T) {
	s := &Server{ownerID: testOwner}
	for _, tc := range []struct {
		h    http.Header
		set  bool
		code string // "" for success
		n    int
	}{
		{http.Header{}, false, "", 0},
		{http.Header{"X-Amz-Acl": {"public-read"}}, true, "", 2},
		{http.Header{"X-Amz-Acl": {"nonsense"}}, false, "InvalidArgument", 0},
		{http.Header{"X-Amz-Grant-Read": {`uri="` + acl.AllUsers + `"`}, "X-Amz-Grant-Full-Control": {"id=" + testOwner}}, true, "", 2},
		{http.Header{"X-Amz-Grant-Read": {`id="stranger"`}}, false, "InvalidArgument", 0},
		{http.Header{"X-Amz-Grant-Read": {`emailAddress="a@b.c"`}}, false, "UnresolvableGrantByEmailAddress", 0},
		{http.Header{"X-Amz-Grant-Read": {`who="a"`}}, false, "InvalidArgument", 0},
		{http.Header{"X-Amz-Acl": {"private"}, "X-Amz-Grant-Read": {"id=" + testOwner}}, false, "InvalidRequest", 0},
	} {
		a, set, err := s.headerACL(tc.h)
		if tc.code != "" {
			if err == nil || toS3(err).Code != tc.code {
				t.Errorf("headerACL(%v) = %v, want %s", tc.h, err, tc.code)
			}
			continue
		}
		if err != nil || set != tc.set || len(a.Grants) != tc.n {
			t.Errorf("headerACL(%v) = %+v, %v, %v", tc.h, a, set, err)
		}
	}
	// full-control comes first, whatever the order of the headers.
	a, _, _ := s.headerACL(http.Header{"X-Amz-Grant-Read": {`uri="` + acl.AllUsers + `"`}, "X-Amz-Grant-Full-Control": {"id=" + testOwner}})
	if a.Grants[0].Permission != acl.FullControl {
		t.Fatalf("grant order %+v", a.Grants)
	}
}

func TestPolicyOf(t *testing.T) {
	s := &Server{ownerID: testOwner}
	doc := s.policyOf(nil)
	if len(doc.Grants) != 1 || doc.Grants[0].Grantee.ID != testOwner || doc.Grants[0].Grantee.DisplayName != "owner" || doc.Grants[0].Permission != "FULL_CONTROL" {
		t.Fatalf("no ACL answers %+v", doc)
	}
	b, err := xml.Marshal(s.policyOf(&acl.ACL{Grants: []acl.Grant{{Grantee: acl.GroupOf(acl.AllUsers), Permission: acl.Read}}}))
	if err != nil {
		t.Fatal(err)
	}
	// What GET answers, PUT takes back.
	a, err := decodePolicy(b, testOwner)
	if err != nil || len(a.Grants) != 1 || a.Grants[0].Grantee.URI != acl.AllUsers {
		t.Fatalf("round trip of %s: %+v, %v", b, a, err)
	}
}

// FuzzPolicyXML: any body decodes to an ACL, or to an S3 error; what
// decodes and checks survives the encoding and GET's document.
func FuzzPolicyXML(f *testing.F) {
	f.Add(policyXML(testOwner, xmlGrant("Group", "<URI>"+acl.AllUsers+"</URI>", "READ")))
	f.Add(policyXML("", xmlGrant("CanonicalUser", "<ID>"+testOwner+"</ID>", "FULL_CONTROL")))
	f.Add([]byte("<AccessControlPolicy><AccessControlList><Grant/></AccessControlList></AccessControlPolicy>"))
	s := &Server{ownerID: testOwner}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodePolicy(b, testOwner)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("decodePolicy error %v is not an S3 error", err)
			}
			return
		}
		if a.Check(testOwner) != nil {
			return
		}
		got, err := acl.Decode(acl.Encode(a))
		if err != nil || !slices.Equal(got.Grants, a.Grants) {
			t.Fatalf("encoding round trip of %+v: %+v, %v", a, got, err)
		}
		out, err := xml.Marshal(s.policyOf(&a))
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodePolicy(out, testOwner)
		if err != nil || !slices.Equal(back.Grants, a.Grants) {
			t.Fatalf("GET's document %s decodes as %+v, %v", out, back, err)
		}
	})
}
