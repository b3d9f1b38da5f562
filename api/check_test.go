package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/nastest"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// checkReceiver is a webhook check: it verifies each request's
// signature, holds the first one until release is closed, and fails a
// diff that adds docs/bug.md (passes any other).
type checkReceiver struct {
	mu       sync.Mutex
	secret   string
	bad      []string
	payloads []check.Payload
	release  chan struct{}
	held     bool
}

func (rc *checkReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	secret, first := rc.secret, !rc.held
	rc.held = true
	rc.mu.Unlock()
	if first {
		<-rc.release
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := hook.Verify(secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), time.Minute); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var p check.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.payloads = append(rc.payloads, p)
	for _, c := range p.Changes {
		if c.Key == "docs/bug.md" && c.Kind != "D" {
			json.NewEncoder(w).Encode(check.Answer{State: check.StateFail, Message: "lint: docs/bug.md has a bug", DiffSHA256: p.DiffSHA256})
			return
		}
	}
	json.NewEncoder(w).Encode(check.Answer{State: check.StatePass, Message: "lint: clean"})
}

// fastChecks are check options for tests: quick polls and retries.
func fastChecks(commands string) check.Options {
	return check.Options{Commands: commands, Poll: 10 * time.Millisecond, Backoff: 20 * time.Millisecond, MaxAttempts: 2, Timeout: 5 * time.Second}
}

// cardCheck waits until the card of gate id shows check name in a state
// other than pending, and returns it.
func cardCheck(c *client, id, name string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		g := c.ok("gate/get", map[string]any{"gate_id": id})["gate"].(map[string]any)
		checks, _ := g["card"].(map[string]any)["checks"].([]any)
		for _, x := range checks {
			r := x.(map[string]any)
			if r["name"] == name && r["state"] != "pending" {
				return r
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("check %s of gate %s still pending: %v", name, id, checks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func seedChecks(t *testing.T, c *client, repo string) {
	t.Helper()
	c.ok("repo/create", map[string]any{"repo": repo, "protected": false})
	if _, err := c.srv.Gateway.Branches.Put(context.Background(), repo, "main", "docs/a.md", &manifest.Entry{ETag: "v1"}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	c.ok("commit/create", map[string]any{"repo": repo, "branch": "main", "message": "seed"})
	c.ok("branch/protect", map[string]any{"repo": repo, "name": "main"})
}

func putKey(t *testing.T, c *client, repo, br, key, etag string) {
	t.Helper()
	if _, err := c.srv.Gateway.Branches.Put(context.Background(), repo, br, key, &manifest.Entry{ETag: etag}, branch.Condition{}); err != nil {
		t.Fatal(err)
	}
}

// TestChecksWebhook: a webhook check that main requires receives a
// lease's proposal signed; while it runs an approval is ChecksPending,
// when it fails ChecksFailed, and a rule that would merge at once holds
// the proposal instead. After a fix the proposal of the new digest runs
// the check again, passes, and merges as the rule said. A lease cannot add a
// check, require one or run one again, and sees no check's message.
func TestChecksWebhook(t *testing.T) {
	rc := &checkReceiver{release: make(chan struct{})}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	c := &client{t: t, srv: nastest.Start(t, nastest.Options{Checks: fastChecks("")}),
		creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}}
	seedChecks(t, c, "chk")
	ck := c.ok("check/add", map[string]any{"repo": "chk", "name": "lint", "url": recv.URL + "/lint"})["check"].(map[string]any)
	if ck["kind"] != "webhook" || ck["secret"] == "" {
		t.Fatalf("check/add: %v", ck)
	}
	rc.mu.Lock()
	rc.secret = ck["secret"].(string)
	rc.mu.Unlock()
	c.fails("check/require", map[string]any{"repo": "chk", "branch": "main", "checks": []string{"nope"}}, 404, "NotFound")
	c.ok("check/require", map[string]any{"repo": "chk", "branch": "main", "checks": []string{"lint"}})
	c.ok("policy/set", map[string]any{"repo": "chk", "policy": map[string]any{"rules": []map[string]any{{"name": "auto", "then": "merge"}}}})

	lc, l := leaseClient(t, c, map[string]any{"repo": "chk", "role": "run", "fork_from": "main", "paths": []string{"docs/**"},
		"actions": []string{"list", "read", "write", "delete", "propose"}})
	br := l["branch"].(string)
	lc.fails("check/add", map[string]any{"repo": "chk", "name": "mine", "url": recv.URL}, 403, "AccessDenied")
	lc.fails("check/require", map[string]any{"repo": "chk", "branch": "main", "checks": []string{}}, 403, "AccessDenied")

	putKey(t, c, "chk", br, "docs/bug.md", "b1")
	lc.fails("propose/create", map[string]any{"repo": "chk", "into": "main", "checks": []string{"nope"}}, 404, "NotFound")
	p1 := lc.ok("propose/create", map[string]any{"repo": "chk", "into": "main", "intent": "a doc"})["proposal"].(map[string]any)
	if p1["status"] != "pending" || p1["decision"] != "gate" || !strings.Contains(p1["rule"].(string), "checks") {
		t.Fatalf("a proposal with required checks merged by a rule: %v", p1)
	}
	g1 := p1["gate_id"].(string)
	c.fails("gate/approve", map[string]any{"gate_id": g1}, 409, "ChecksPending")
	lc.fails("check/rerun", map[string]any{"proposal_id": p1["proposal_id"]}, 403, "AccessDenied")
	lc.fails("gate/approve", map[string]any{"gate_id": g1}, 403, "AccessDenied")
	close(rc.release)
	r1 := cardCheck(c, g1, "lint")
	if r1["state"] != "fail" || r1["required"] != true || r1["diff_sha256"] != p1["diff_sha256"] || !strings.Contains(r1["message"].(string), "bug") {
		t.Fatalf("card check: %v", r1)
	}
	c.fails("gate/approve", map[string]any{"gate_id": g1}, 409, "ChecksFailed")
	for _, g := range lc.ok("gate/list", map[string]any{})["gates"].([]any) {
		for _, x := range g.(map[string]any)["card"].(map[string]any)["checks"].([]any) {
			if m := x.(map[string]any)["message"]; m != nil {
				t.Fatalf("a lease sees a check's message: %v", x)
			}
		}
	}

	// The fix: a new diff, a new digest, the check runs again.
	if _, err := c.srv.Gateway.Branches.Delete(context.Background(), "chk", br, "docs/bug.md", branch.Condition{}); err != nil {
		t.Fatal(err)
	}
	putKey(t, c, "chk", br, "docs/good.md", "g1")
	p2 := lc.ok("propose/create", map[string]any{"repo": "chk", "into": "main"})["proposal"].(map[string]any)
	if p2["diff_sha256"] == p1["diff_sha256"] || p2["gate_id"] == g1 {
		t.Fatalf("the fixed proposal: %v", p2)
	}
	g2 := p2["gate_id"].(string)
	if r2 := cardCheck(c, g2, "lint"); r2["state"] != "pass" || r2["diff_sha256"] != p2["diff_sha256"] {
		t.Fatalf("after the fix: %v", r2)
	}
	if g := c.ok("gate/get", map[string]any{"gate_id": g1})["gate"].(map[string]any); g["status"] != "void" {
		t.Fatalf("the first gate after the fix: %v", g["status"])
	}
	// The policy would have merged it: once its checks pass, it merges.
	var g map[string]any
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		g = c.ok("gate/get", map[string]any{"gate_id": g2})["gate"].(map[string]any)
		if g["status"] != "pending" || time.Now().After(deadline) {
			break
		}
	}
	if g["status"] != "approved" || g["merge_commit"] == "" || g["decided_by"] != "policy" {
		t.Fatalf("after the pass: %v", g)
	}
	var states []string
	for _, x := range c.ok("record/list", map[string]any{"repo": "chk", "kinds": []string{"check"}})["records"].([]any) {
		d := x.(map[string]any)["details"].(map[string]any)
		states = append(states, d["check"].(string)+" "+d["state"].(string))
	}
	if strings.Join(states, ",") != "lint fail,lint pass" {
		t.Errorf("recorded check results: %v", states)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 || len(rc.payloads) != 2 || rc.payloads[0].Repo != "chk" || rc.payloads[0].Into != "main" ||
		rc.payloads[0].GateID != g1 || rc.payloads[0].SourceHead == "" || rc.payloads[0].Check != "lint" || rc.payloads[1].DiffSHA256 != p2["diff_sha256"] {
		t.Fatalf("receiver: bad %v, payloads %+v", rc.bad, rc.payloads)
	}
}

// TestChecksStaleAnswer: an answer about another digest does not count:
// after the retries the check is error and the approval ChecksFailed.
func TestChecksStaleAnswer(t *testing.T) {
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(check.Answer{State: check.StatePass, DiffSHA256: strings.Repeat("0", 64)})
	}))
	defer recv.Close()
	c := &client{t: t, srv: nastest.Start(t, nastest.Options{Checks: fastChecks("")}),
		creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}}
	seedChecks(t, c, "stale")
	c.ok("check/add", map[string]any{"repo": "stale", "name": "ci", "url": recv.URL})
	c.ok("check/require", map[string]any{"repo": "stale", "branch": "main", "checks": []string{"ci"}})
	c.ok("branch/create", map[string]any{"repo": "stale", "name": "feat", "from": "main"})
	putKey(t, c, "stale", "feat", "docs/b.md", "b")
	p := c.ok("propose/create", map[string]any{"repo": "stale", "branch": "feat", "into": "main"})["proposal"].(map[string]any)
	r := cardCheck(c, p["gate_id"].(string), "ci")
	if r["state"] != "error" || r["attempts"] != float64(2) || !strings.Contains(r["message"].(string), "stale") {
		t.Fatalf("a stale answer: %v", r)
	}
	c.fails("gate/approve", map[string]any{"gate_id": p["gate_id"]}, 409, "ChecksFailed")
}

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChecksCommand: command checks run only from the gateway's folder
// (a program outside it, or a link out of it, is refused), get the
// proposal on stdin in an environment without NAS_* or AWS_*, pass on
// exit 0 and fail otherwise with their output as the message; one that
// hangs is killed with its process group at its timeout. The owner's
// direct merge into a branch that requires checks is refused until a
// proposal of the same diff passed them, and again once the branch moved.
func TestChecksCommand(t *testing.T) {
	t.Setenv("NAS_TEST_SECRET_FOR_CHECKS", "x")
	dir, tmp := t.TempDir(), t.TempDir()
	pass := writeScript(t, dir, "pass.sh", "grep -q '\"diff_sha256\"' && echo \"ok nas=$(env | grep -c -e '^NAS_' -e '^AWS_')\"\n")
	fail := writeScript(t, dir, "fail.sh", "cat >/dev/null; echo 'two problems' >&2; exit 3\n")
	pidFile := filepath.Join(tmp, "pid")
	hang := writeScript(t, dir, "hang.sh", "sleep 300 &\necho $! > \""+pidFile+"\"\nwait\n")
	outside := writeScript(t, tmp, "out.sh", "exit 0\n")
	if err := os.Symlink("/bin/sh", filepath.Join(dir, "sh")); err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, srv: nastest.Start(t, nastest.Options{Checks: fastChecks(dir)}),
		creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}}
	seedChecks(t, c, "cmd")
	c.fails("check/add", map[string]any{"repo": "cmd", "name": "out", "command": outside}, 400, "InvalidArgument")
	c.fails("check/add", map[string]any{"repo": "cmd", "name": "link", "command": filepath.Join(dir, "sh")}, 400, "InvalidArgument")
	c.fails("check/add", map[string]any{"repo": "cmd", "name": "rel", "command": "pass.sh"}, 400, "InvalidArgument")
	c.ok("check/add", map[string]any{"repo": "cmd", "name": "unit", "command": pass})
	c.ok("check/add", map[string]any{"repo": "cmd", "name": "vet", "command": fail})
	c.ok("check/add", map[string]any{"repo": "cmd", "name": "slow", "command": hang, "timeout_seconds": 1})
	c.ok("check/require", map[string]any{"repo": "cmd", "branch": "main", "checks": []string{"unit"}})

	c.ok("branch/create", map[string]any{"repo": "cmd", "name": "feat", "from": "main"})
	putKey(t, c, "cmd", "feat", "docs/b.md", "b")
	c.ok("commit/create", map[string]any{"repo": "cmd", "branch": "feat", "message": "b"})
	c.fails("merge/create", map[string]any{"repo": "cmd", "from": "feat", "into": "main"}, 409, "ChecksPending")
	start := time.Now()
	p := c.ok("propose/create", map[string]any{"repo": "cmd", "branch": "feat", "into": "main", "checks": []string{"vet", "slow"}})["proposal"].(map[string]any)
	gid := p["gate_id"].(string)
	if r := cardCheck(c, gid, "unit"); r["state"] != "pass" || r["message"] != "ok nas=0\n" {
		t.Fatalf("unit: %v", r)
	}
	if r := cardCheck(c, gid, "vet"); r["state"] != "fail" || r["required"] != false || !strings.Contains(r["message"].(string), "two problems") ||
		!strings.Contains(r["message"].(string), "exit status 3") {
		t.Fatalf("vet: %v", r)
	}
	r := cardCheck(c, gid, "slow")
	if r["state"] != "error" || !strings.Contains(r["message"].(string), "timed out") || time.Since(start) > 20*time.Second {
		t.Fatalf("slow: %v after %v", r, time.Since(start))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(st), ") Z") {
		t.Fatalf("the hanging check's child %d outlived its timeout: %s", pid, st)
	}

	// vet and slow are only asked for: the required unit passed, so the
	// owner's direct merge of this diff is allowed, bound to its heads.
	res := c.ok("merge/create", map[string]any{"repo": "cmd", "from": "feat", "into": "main"})["result"].(map[string]any)
	if res["commit"] == "" {
		t.Fatalf("merge after pass: %v", res)
	}
	putKey(t, c, "cmd", "feat", "docs/c.md", "c")
	c.ok("commit/create", map[string]any{"repo": "cmd", "branch": "feat", "message": "c"})
	c.fails("merge/create", map[string]any{"repo": "cmd", "from": "feat", "into": "main"}, 409, "ChecksPending")
	c.fails("check/rerun", map[string]any{"proposal_id": p["proposal_id"]}, 409, "ApprovalVoid")
}

// TestChecksRerun: a check that main comes to require after a proposal
// was made is pending on its card until `check/rerun` runs it.
func TestChecksRerun(t *testing.T) {
	dir := t.TempDir()
	pass := writeScript(t, dir, "pass.sh", "cat >/dev/null\n")
	c := &client{t: t, srv: nastest.Start(t, nastest.Options{Checks: fastChecks(dir)}),
		creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}}
	seedChecks(t, c, "rerun")
	c.ok("check/add", map[string]any{"repo": "rerun", "name": "unit", "command": pass})
	c.ok("branch/create", map[string]any{"repo": "rerun", "name": "feat", "from": "main"})
	putKey(t, c, "rerun", "feat", "docs/b.md", "b")
	p := c.ok("propose/create", map[string]any{"repo": "rerun", "branch": "feat", "into": "main"})["proposal"].(map[string]any)
	c.ok("check/require", map[string]any{"repo": "rerun", "branch": "main", "checks": []string{"unit"}})
	c.fails("gate/approve", map[string]any{"gate_id": p["gate_id"]}, 409, "ChecksPending")
	c.ok("check/rerun", map[string]any{"proposal_id": p["proposal_id"]})
	if r := cardCheck(c, p["gate_id"].(string), "unit"); r["state"] != "pass" {
		t.Fatalf("after rerun: %v", r)
	}
	c.ok("gate/approve", map[string]any{"gate_id": p["gate_id"]})
	// A proposal that is not there is 404, not a server error.
	for _, op := range []string{"check/results", "check/rerun"} {
		c.fails(op, map[string]any{"proposal_id": "pr_nope"}, 404, "NotFound")
	}
}
