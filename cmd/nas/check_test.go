package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/check"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/nastest"
)

// cliError runs a command with --json and returns its exit code and the
// error document's code.
func cliError(t *testing.T, args ...string) (int, string) {
	t.Helper()
	exit, stderr := runCLIStderr(t, append(args, "--json")...)
	var doc apiv1.ErrorDocument
	if err := json.Unmarshal([]byte(stderr), &doc); err != nil || doc.Error == nil {
		t.Fatalf("nas %s: not an error document: %q", strings.Join(args, " "), stderr)
	}
	return exit, doc.Error.Code
}

// TestCheckCLI: `nas check add|require|list` set up a webhook check that
// main requires; `nas merge` is refused while no proposal passed it;
// `nas propose --checks` waits at a gate (exit 3) with the checks
// running, `nas check results` shows the pass bound to the proposal's
// digest, and `nas gate approve` merges.
func TestCheckCLI(t *testing.T) {
	var secret string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if hook.Verify(secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), time.Minute) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(check.Answer{State: check.StatePass, Message: "looks fine"})
	}))
	defer recv.Close()
	srv := nastest.Start(t, nastest.Options{Checks: check.Options{Poll: 10 * time.Millisecond, Backoff: 20 * time.Millisecond}})
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	c := ownerClient(srv.Endpoint)
	mustCLI(t, "repo", "create", "clichk")
	mustCLI(t, "branch", "create", "clichk", "feat", "--from", "main")
	if _, err := c.Put(context.Background(), nasclient.Object{Repo: "clichk", Branch: "feat", Key: "a.txt"}, strings.NewReader("a"), 1, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "commit", "clichk", "feat", "-m", "a")

	var added apiv1.CheckResponse
	jsonStep(t, 0, &added, "check", "add", "clichk", "lint", "--url", recv.URL)
	secret = added.Check.Secret
	if added.Check.Kind != "webhook" || secret == "" {
		t.Fatalf("check add: %+v", added)
	}
	if code, stderr := runCLIStderr(t, "check", "add", "clichk", "unit", "--command", "/bin/true"); code != 1 || !strings.Contains(stderr, "check-commands") {
		t.Errorf("a command check on a gateway without a folder: %d %q", code, stderr)
	}
	if code, _ := runCLI(t, "check", "add", "clichk", "both", "--url", recv.URL, "--command", "/bin/true"); code != 2 {
		t.Errorf("a check with --url and --command: exit %d", code)
	}
	if out := mustCLI(t, "check", "require", "clichk", "main", "lint"); !strings.Contains(out, "merges into main require lint") {
		t.Errorf("check require: %q", out)
	}
	var list apiv1.CheckListResponse
	jsonStep(t, 0, &list, "check", "list", "clichk")
	if len(list.Checks) != 1 || list.Checks[0].Secret != "" || len(list.Rules) != 1 || list.Rules[0].Branch != "main" {
		t.Fatalf("check list: %+v", list)
	}
	if exit, code := cliError(t, "merge", "clichk", "feat", "--into", "main"); exit != 1 || code != apiv1.CodeChecksPending {
		t.Fatalf("nas merge before the checks: exit %d, %s", exit, code)
	}

	code, out := runCLI(t, "propose", "clichk", "feat", "--into", "main", "--checks", "lint")
	if code != 3 || !strings.Contains(out, "checks lint running") {
		t.Fatalf("nas propose --checks: exit %d %q", code, out)
	}
	var prop apiv1.ProposeCreateResponse
	jsonStep(t, 3, &prop, "propose", "clichk", "feat", "--into", "main") // the same diff: the same gate
	var res apiv1.CheckResultsResponse
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		jsonStep(t, 0, &res, "check", "results", prop.Proposal.ID)
		if len(res.Results) == 1 && res.Results[0].State != check.StatePending || time.Now().After(deadline) {
			break
		}
	}
	if r := res.Results; len(r) != 1 || r[0].State != "pass" || !r[0].Required || r[0].DiffSHA256 != prop.Proposal.Digest || r[0].Message != "looks fine" {
		t.Fatalf("check results: %+v", res)
	}
	if out := mustCLI(t, "gate", "list"); !strings.Contains(out, "checks lint pass") {
		t.Errorf("gate list: %q", out)
	}
	if out := mustCLI(t, "check", "results", prop.Proposal.ID); !strings.Contains(out, "lint (required)\tpass") {
		t.Errorf("check results: %q", out)
	}
	mustCLI(t, "gate", "approve", prop.Proposal.GateID)
	if code, _ := runCLI(t, "check", "rerun", prop.Proposal.ID); code != 1 {
		t.Errorf("rerun of a merged proposal: exit %d", code)
	}
	mustCLI(t, "check", "require", "clichk", "main")
	mustCLI(t, "check", "remove", "clichk", "lint")
}
