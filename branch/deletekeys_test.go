package branch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// TestDeleteKeys: one call deletes many keys as Delete does each: present
// keys get delete markers, a missing key changes nothing, a key named
// twice stacks two markers, a bad key fails alone, and the quota counts
// the objects gone; a protected branch refuses the whole call.
func TestDeleteKeys(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "dks", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	three := int64(3)
	if _, err := s.SetLimits(ctx, "dks", "main", branch.LimitsUpdate{QuotaObjects: &three}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		put(t, s, "dks", "main", k, "e-"+k)
	}
	rs := s.DeleteKeys(ctx, "dks", "main", []string{"a", "missing", "b", "b", "", "c"}, branch.Condition{})
	want := []bool{true, false, true, true, false, true} // a delete marker
	for i, r := range rs {
		if r.DeleteMarker != want[i] {
			t.Errorf("key %d: %+v, want a marker %v", i, r, want[i])
		}
	}
	if !errors.Is(rs[4].Err, branch.ErrInvalid) {
		t.Errorf("the empty key: %v, want ErrInvalid", rs[4].Err)
	}
	if rs[2].VersionID == rs[3].VersionID {
		t.Error("a key named twice got one marker")
	}
	if got := keys(t, s, "dks", "main"); len(got) != 0 {
		t.Fatalf("left after DeleteKeys: %v", got)
	}
	for _, k := range []string{"d", "e", "f"} { // room for three again
		put(t, s, "dks", "main", k, "e-"+k)
	}
	if err := s.SetProtected(ctx, "dks", "main", true); err != nil {
		t.Fatal(err)
	}
	if rs := s.DeleteKeys(ctx, "dks", "main", []string{"d"}, branch.Condition{}); !errors.Is(rs[0].Err, branch.ErrProtected) {
		t.Fatalf("DeleteKeys on a protected branch: %v, want ErrProtected", rs[0].Err)
	}
}

// TestDeleteKeysOfLongKeys: S3's largest batch, 1,000 keys of 1,005
// bytes, fits (in several transactions) and deletes every key.
func TestDeleteKeysOfLongKeys(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	if _, err := s.CreateRepo(ctx, "dkl", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	var ks []string
	var es []branch.ImportEntry
	for i := range 1000 {
		k := fmt.Sprintf("%04d/%s", i, strings.Repeat("x", 1000))
		ks = append(ks, k)
		es = append(es, branch.ImportEntry{Key: k, Entry: &manifest.Entry{Size: 1, ETag: "e"}})
	}
	if err := branch.StageBulk(ctx, s, "dkl", "main", es); err != nil {
		t.Fatal(err)
	}
	for i, r := range s.DeleteKeys(ctx, "dkl", "main", ks, branch.Condition{}) {
		if r.Err != nil || !r.DeleteMarker {
			t.Fatalf("key %d: %+v", i, r)
		}
	}
	if got := keys(t, s, "dkl", "main"); len(got) != 0 {
		t.Fatalf("%d keys left", len(got))
	}
}
