package branch_test

import (
	"errors"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// TestGetAt: an entry as of a commit stays what it was after the branch
// moves on, whatever branch the commit was made on; a key absent then is
// NoSuchKey, a commit the repository lacks NoSuchVersion.
func TestGetAt(t *testing.T) {
	s, ctx := mergeSetup(t)
	base, err := s.ResolveRef(ctx, "merge", "main")
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "merge", "run", "a", "run-a")
	run := commitRun(t, s, "run")
	for _, tc := range []struct {
		id        manifest.CommitID
		key, etag string
	}{{base, "a", "base-a"}, {run, "a", "run-a"}} {
		e, err := s.GetAt(ctx, "merge", tc.id, tc.key)
		if err != nil || e.ETag != tc.etag {
			t.Errorf("GetAt(%s, %s) = %+v, %v; want %s", tc.id, tc.key, e, err, tc.etag)
		}
	}
	if _, err := s.GetAt(ctx, "merge", base, "none"); !errors.Is(err, branch.ErrNoSuchKey) {
		t.Errorf("a key absent at the commit: %v", err)
	}
	if _, err := s.GetAt(ctx, "merge", manifest.CommitID{1}, "a"); !errors.Is(err, branch.ErrNoSuchVersion) {
		t.Errorf("a commit the repository lacks: %v", err)
	}
}
