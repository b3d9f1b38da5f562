package branch_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentnas/nas/acl"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

var publicRead = &acl.ACL{Grants: []acl.Grant{
	{Grantee: acl.User("me"), Permission: acl.FullControl},
	{Grantee: acl.GroupOf(acl.AllUsers), Permission: acl.Read},
}}

// TestACLKeepsTheVersion: SetACL retouches versions as SetTags does: the
// current version keeps its ID and bytes, an older committed one is
// history and refused, and tags and ACL do not disturb each other.
func TestACLKeepsTheVersion(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "data", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	v1 := put(t, s, "data", "main", "k", "e1")
	setTags(t, s, "main", "k", "", manifest.Pair{Name: "a", Value: "1"})
	got, err := s.SetACL(ctx, "data", "main", "k", "", publicRead, branch.Writer{})
	if err != nil || got.VersionID != v1.VersionID || got.ETag != "e1" || tagsOf(got) != "[{a 1}]" {
		t.Fatalf("SetACL made %+v, %v from %+v", got, err, v1)
	}
	id := commitAll(t, s, "main")
	if e := getVersion(t, s, "main", "k", id); len(e.ACL.Grants) != 2 {
		t.Fatalf("the commit holds ACL %+v", e.ACL)
	}
	if _, err := s.SetACL(ctx, "data", "main", "k", v1.VersionID, nil, branch.Writer{}); err != nil {
		t.Fatalf("the current version, committed, by its ID: %v", err)
	}
	if e, _ := s.Get(ctx, "data", "main", "k"); e.ACL != nil || e.VersionID != v1.VersionID {
		t.Fatalf("current after SetACL(nil): %+v", e)
	}
	put(t, s, "data", "main", "k", "e2")
	for _, vid := range []string{v1.VersionID, id} {
		if _, err := s.SetACL(ctx, "data", "main", "k", vid, publicRead, branch.Writer{}); !errors.Is(err, branch.ErrImmutable) {
			t.Errorf("SetACL of history %s: %v, want ErrImmutable", vid, err)
		}
	}
}

// TestSameVersionIgnoresACL: an entry and its retouched copy are one
// version; other changes are not.
func TestSameVersionIgnoresACL(t *testing.T) {
	e := &manifest.Entry{Size: 1, ETag: "e", VersionID: "v"}
	r := *e
	r.ACL, r.Tags = publicRead, []manifest.Pair{{Name: "a", Value: "b"}}
	if !branch.SameVersion(e.Encode(), r.Encode()) {
		t.Fatal("ACL and tags must not make another version")
	}
	r.ETag = "f"
	if branch.SameVersion(e.Encode(), r.Encode()) {
		t.Fatal("another ETag is another version")
	}
}
