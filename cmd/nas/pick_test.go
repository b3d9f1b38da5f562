package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// decodeInto decodes a command's --json output into v, refusing any
// field v does not have.
func decodeInto(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %q into %T: %v", out, v, err)
	}
}

// pickFixture is a repository "pick" with main at a base of a, b, c and
// a branch dev whose one commit modifies a, deletes b and adds d.
type pickFixture struct {
	c      *nasclient.Client
	change string // dev's commit
}

func (f *pickFixture) put(t *testing.T, br, key, body string) {
	t.Helper()
	o := nasclient.Object{Repo: "pick", Branch: br, Key: key}
	if _, err := f.c.Put(context.Background(), o, strings.NewReader(body), int64(len(body)), nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (f *pickFixture) get(t *testing.T, br, key string) string {
	t.Helper()
	var buf strings.Builder
	err := f.c.Get(context.Background(), nasclient.Object{Repo: "pick", Branch: br, Key: key}, "", 0, -1, func(r io.Reader, _ nasclient.Info) error {
		_, err := io.Copy(&buf, r)
		return err
	})
	if err != nil {
		return "-"
	}
	return buf.String()
}

func newPickFixture(t *testing.T) *pickFixture {
	_, c := ownerCLI(t)
	f := &pickFixture{c: c}
	mustCLI(t, "repo", "create", "pick", "--unprotected")
	for _, k := range []string{"a", "b", "c"} {
		f.put(t, "main", k, "base-"+k)
	}
	mustCLI(t, "commit", "pick", "main", "-m", "base")
	mustCLI(t, "branch", "create", "pick", "dev")
	f.put(t, "dev", "a", "dev-a")
	f.put(t, "dev", "d", "dev-d")
	if _, err := c.Delete(context.Background(), nasclient.Object{Repo: "pick", Branch: "dev", Key: "b"}); err != nil {
		t.Fatal(err)
	}
	var cr apiv1.CommitResponse
	decodeInto(t, mustCLI(t, "commit", "pick", "dev", "-m", "dev change", "--json"), &cr)
	f.change = cr.Commit.ID
	return f
}

// TestCherryPickAndRevert: a cherry-pick replays dev's modify, delete and
// add on main; a revert on dev undoes them; --json answers decode into
// apiv1.PickResponse.
func TestCherryPickAndRevert(t *testing.T) {
	f := newPickFixture(t)
	var pr apiv1.PickResponse
	decodeInto(t, mustCLI(t, "cherry-pick", "pick", "main", f.change, "--json"), &pr)
	if pr.Result.Applied != 3 || pr.Result.Commit == "" || pr.Result.Theirs != f.change {
		t.Errorf("cherry-pick result %+v", pr.Result)
	}
	for k, want := range map[string]string{"a": "dev-a", "b": "-", "c": "base-c", "d": "dev-d"} {
		if got := f.get(t, "main", k); got != want {
			t.Errorf("main/%s after cherry-pick = %q, want %q", k, got, want)
		}
	}
	out := mustCLI(t, "revert", "pick", "dev", f.change)
	if !strings.Contains(out, "reverted "+f.change+" on dev: 3 key(s) changed") {
		t.Errorf("revert said %q", out)
	}
	for k, want := range map[string]string{"a": "base-a", "b": "base-b", "c": "base-c", "d": "-"} {
		if got := f.get(t, "dev", k); got != want {
			t.Errorf("dev/%s after revert = %q, want %q", k, got, want)
		}
	}
	if log := mustCLI(t, "log", "pick", "dev", "-n", "1"); !strings.Contains(log, "revert "+f.change[:12]) {
		t.Errorf("the revert's message: %q", log)
	}
	var rr apiv1.PickResponse
	decodeInto(t, mustCLI(t, "revert", "pick", "main", pr.Result.Commit, "-m", "undo the pick", "--json"), &rr)
	if rr.Result.Applied != 3 || rr.Result.Base != pr.Result.Commit {
		t.Errorf("revert result %+v", rr.Result)
	}
	if got := f.get(t, "main", "b"); got != "base-b" {
		t.Errorf("main/b after reverting the cherry-pick = %q", got)
	}
}

// TestPickConflicts: a later change to the same keys is a conflict that
// lists each key with both ETags and changes nothing; a protected branch
// is refused like a commit.
func TestPickConflicts(t *testing.T) {
	f := newPickFixture(t)
	f.put(t, "dev", "a", "later-a")
	f.put(t, "dev", "d", "later-d")
	mustCLI(t, "commit", "pick", "dev", "-m", "later")
	code, stderr := runCLIStderr(t, "revert", "pick", "dev", f.change)
	if code != 1 {
		t.Fatalf("conflicting revert exit %d, want 1", code)
	}
	for _, want := range []string{"revert conflict", "  a  ours ", "  d  ours ", "theirs -", "2 conflicting key(s)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("conflict output lacks %q:\n%s", want, stderr)
		}
	}
	if got := f.get(t, "dev", "a"); got != "later-a" {
		t.Errorf("a conflicting revert changed a: %q", got)
	}
	f.put(t, "main", "a", "main-a")
	mustCLI(t, "commit", "pick", "main", "-m", "main's a")
	code, stderr = runCLIStderr(t, "cherry-pick", "pick", "main", f.change, "--json")
	var doc struct {
		Error struct {
			Code    string `json:"code"`
			Details struct {
				Result apiv1.MergeResult `json:"result"`
			} `json:"details"`
		} `json:"error"`
	}
	if code != 1 || json.Unmarshal([]byte(stderr), &doc) != nil || doc.Error.Code != apiv1.CodeMergeConflict ||
		len(doc.Error.Details.Result.Conflicts) != 1 || doc.Error.Details.Result.Conflicts[0].Key != "a" {
		t.Errorf("conflicting cherry-pick: exit %d %s", code, stderr)
	}
	mustCLI(t, "branch", "protect", "pick", "dev")
	code, stderr = runCLIStderr(t, "revert", "pick", "dev", f.change, "-m", "nope")
	if code != 1 || !strings.Contains(stderr, "protected") {
		t.Errorf("revert on a protected branch: exit %d %s", code, stderr)
	}
}

// TestPickLease: a lease reverts on its own branch only what it may
// change; without write, or without delete for a key the revert removes,
// it is refused by the door and nothing changes.
func TestPickLease(t *testing.T) {
	f := newPickFixture(t)
	mustCLI(t, "role", "put", "picker", "--repo", "pick", "--paths", "**", "--actions", "list,read,write,delete")
	leaseFile := func(actions string) string {
		lj := mustCLI(t, "lease", "create", "pick", "--role", "picker", "--paths", "**", "--actions", actions, "--branch", "dev", "--ttl", "1h", "--json")
		p := filepath.Join(t.TempDir(), "lease.json")
		must(t, os.WriteFile(p, []byte(lj), 0o600))
		return p
	}
	for _, actions := range []string{"list,read", "list,read,write"} {
		code, stderr := runCLIStderr(t, "--lease-json", leaseFile(actions), "revert", "pick", "dev", f.change)
		if code != 1 || !strings.Contains(stderr, "AccessDenied") && !strings.Contains(stderr, "denied") {
			t.Errorf("lease with %s: exit %d %s", actions, code, stderr)
		}
	}
	if got := f.get(t, "dev", "d"); got != "dev-d" {
		t.Fatalf("a refused revert changed d: %q", got)
	}
	// A lease that sees only a: the commit's other keys are not named.
	mustCLI(t, "role", "put", "narrow", "--repo", "pick", "--paths", "a", "--actions", "list,read,write,delete")
	lj := mustCLI(t, "lease", "create", "pick", "--role", "narrow", "--paths", "a", "--actions", "list,read,write,delete", "--branch", "dev", "--ttl", "1h", "--json")
	narrow := filepath.Join(t.TempDir(), "narrow.json")
	must(t, os.WriteFile(narrow, []byte(lj), 0o600))
	code, stderr := runCLIStderr(t, "--lease-json", narrow, "revert", "pick", "dev", f.change)
	if code != 1 || !strings.Contains(stderr, "outside the lease's view") || strings.Contains(stderr, "(write ") || strings.Contains(stderr, "(delete ") {
		t.Errorf("a narrow lease's revert of a commit with hidden keys: exit %d %s", code, stderr)
	}
	lf := leaseFile("list,read,write,delete")
	if code, stderr := runCLIStderr(t, "--lease-json", lf, "cherry-pick", "pick", "main", f.change); code != 1 {
		t.Errorf("a lease cherry-picked onto another branch: %s", stderr)
	}
	mustCLI(t, "--lease-json", lf, "revert", "pick", "dev", f.change)
	if got := f.get(t, "dev", "d"); got != "-" {
		t.Errorf("the lease's revert left d: %q", got)
	}
}
