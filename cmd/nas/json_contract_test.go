package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// jsonKeys checks that every object key of a decoded JSON value is
// snake_case; maps keyed by data (counts by kind, labels) are the
// exception the caller names in free.
func jsonKeys(t *testing.T, cmd string, v any, free map[string]bool) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !snakeCase.MatchString(k) {
				t.Errorf("%s: key %q is not snake_case", cmd, k)
			}
			if !free[k] {
				jsonKeys(t, cmd, e, free)
			}
		}
	case []any:
		for _, e := range x {
			jsonKeys(t, cmd, e, free)
		}
	}
}

// jsonStep runs the command with --json, wants exit code want, and
// decodes standard output as exactly one JSON document into out, refusing
// fields out does not have.
func jsonStep(t *testing.T, want int, out any, args ...string) {
	t.Helper()
	code, stdout := runCLI(t, append(args, "--json")...)
	cmd := strings.Join(args, " ")
	if code != want {
		t.Fatalf("nas %s: exit %d, want %d\n%s", cmd, code, want, stdout)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("nas %s --json: %v\n%s", cmd, err, stdout)
	}
	if dec.More() {
		t.Fatalf("nas %s --json printed more than one document:\n%s", cmd, stdout)
	}
	var generic any
	json.Unmarshal([]byte(stdout), &generic)
	jsonKeys(t, cmd, generic, map[string]bool{"counts": true, "details": true})
}

// ndjsonStep runs a streaming command with --json and decodes every line
// strictly into a new T; it returns them.
func ndjsonStep[T any](t *testing.T, args ...string) []T {
	t.Helper()
	code, stdout := runCLI(t, append(args, "--json")...)
	cmd := strings.Join(args, " ")
	if code != exitOK {
		t.Fatalf("nas %s: exit %d\n%s", cmd, code, stdout)
	}
	all := decodeStrict[T](t, stdout)
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var generic any
		if err := json.Unmarshal([]byte(line), &generic); err != nil {
			t.Fatalf("nas %s --json: a line that is not one document: %q", cmd, line)
		}
		jsonKeys(t, cmd, generic, map[string]bool{"details": true})
	}
	return all
}

// TestJSONContract: every command's --json output is one document (NDJSON
// for diff, changes and audit) of its documented type, in snake_case.
func TestJSONContract(t *testing.T) {
	_, c := ownerCLI(t)
	ctx := context.Background()
	put := func(br, key, body string) {
		t.Helper()
		o := nasclient.Object{Repo: "jsonc", Branch: br, Key: key}
		if _, err := c.Put(ctx, o, strings.NewReader(body), int64(len(body)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	jsonStep(t, exitOK, &apiv1.RepoResponse{}, "repo", "create", "jsonc", "--unprotected")
	put("", "a.txt", "one")
	var cm apiv1.CommitResponse
	jsonStep(t, exitOK, &cm, "commit", "jsonc", "main", "-m", "one")
	jsonStep(t, exitOK, &apiv1.CommitLogResponse{}, "log", "jsonc", "main")
	jsonStep(t, exitOK, &apiv1.BranchResponse{}, "branch", "create", "jsonc", "feat")
	jsonStep(t, exitOK, &apiv1.BranchResponse{}, "branch", "show", "jsonc", "feat")
	jsonStep(t, exitOK, &apiv1.BranchListResponse{}, "branch", "list", "jsonc")
	jsonStep(t, exitOK, &apiv1.BranchResponse{}, "branch", "limits", "jsonc", "feat", "--quota-objects", "100")
	put("feat", "secrets/x.env", "two")
	jsonStep(t, exitOK, &apiv1.CommitResponse{}, "commit", "jsonc", "feat", "-m", "two")
	if ch := ndjsonStep[apiv1.Change](t, "diff", "jsonc", "main", "feat"); len(ch) != 1 {
		t.Fatalf("diff: %+v", ch)
	}
	if ch := ndjsonStep[apiv1.Change](t, "changes", "jsonc", "feat"); len(ch) != 1 {
		t.Fatalf("changes: %+v", ch)
	}
	jsonStep(t, exitOK, &apiv1.CheckpointResponse{}, "checkpoint", "create", "jsonc", "main", "cp1")
	jsonStep(t, exitOK, &apiv1.CheckpointListResponse{}, "checkpoint", "list", "jsonc")
	jsonStep(t, exitOK, &apiv1.RestoreResponse{}, "checkpoint", "restore", "jsonc", "main", "cp1")
	jsonStep(t, exitOK, &apiv1.RoleResponse{}, "role", "put", "r1", "--repo", "jsonc", "--paths", "**", "--actions", "list,read,write,propose", "--fork-from", "main")
	jsonStep(t, exitOK, &apiv1.RoleResponse{}, "role", "show", "r1")
	jsonStep(t, exitOK, &apiv1.RoleListResponse{}, "role", "list")
	var lf leaseFile
	jsonStep(t, exitOK, &lf, "lease", "create", "jsonc", "--role", "r1", "--paths", "**", "--actions", "list,read")
	jsonStep(t, exitOK, &apiv1.LeaseGetResponse{}, "lease", "show", lf.ID)
	jsonStep(t, exitOK, &apiv1.LeaseListResponse{}, "lease", "list", "jsonc")
	var g apiv1.GrantResponse
	jsonStep(t, exitOK, &g, "share", "grant", lf.ID, "a.txt")
	jsonStep(t, exitOK, &apiv1.ShareListResponse{}, "share", "list", lf.ID)
	jsonStep(t, exitOK, &apiv1.GrantResponse{}, "share", "revoke", lf.ID, g.Grant.ID)
	jsonStep(t, exitOK, &apiv1.PolicyResponse{}, "policy", "set", "jsonc", "../../docs/examples/rules.yaml")
	jsonStep(t, exitOK, &apiv1.PolicyResponse{}, "policy", "get", "jsonc")
	var hk apiv1.HookResponse
	jsonStep(t, exitOK, &hk, "hook", "add", "jsonc", "http://127.0.0.1:9/unreachable", "--events", "commit,merge")
	jsonStep(t, exitOK, &apiv1.HookListResponse{}, "hook", "list", "jsonc")
	jsonStep(t, exitOK, &apiv1.HookDeliveriesResponse{}, "hook", "deliveries", "jsonc", hk.Hook.ID)
	jsonStep(t, exitOK, &apiv1.HookResponse{}, "hook", "remove", "jsonc", hk.Hook.ID)
	// secrets/** meets a gate: the proposal waits, exit 3, and still one document.
	var pr apiv1.ProposeCreateResponse
	jsonStep(t, exitWaiting, &pr, "propose", "jsonc", "feat", "--into", "main")
	var gl apiv1.GateListResponse
	jsonStep(t, exitOK, &gl, "gate", "list")
	if len(gl.Gates) != 1 {
		t.Fatalf("gates: %+v", gl)
	}
	jsonStep(t, exitOK, &apiv1.GateResponse{}, "gate", "show", gl.Gates[0].ID)
	jsonStep(t, exitOK, &apiv1.GateStatsResponse{}, "gate", "stats")
	jsonStep(t, exitOK, &apiv1.GateResponse{}, "gate", "deny", gl.Gates[0].ID, "--reason", "not now")
	jsonStep(t, exitOK, &apiv1.MergeCreateResponse{}, "merge", "jsonc", "feat", "--into", "main")
	jsonStep(t, exitOK, &apiv1.RecordExplainResponse{}, "explain", "jsonc", cm.Commit.ID)
	if recs := ndjsonStep[apiv1.Event](t, "audit", "--repo", "jsonc"); len(recs) == 0 {
		t.Fatal("audit printed no records")
	}
	jsonStep(t, exitOK, &apiv1.RecordVerifyResponse{}, "verify")
	jsonStep(t, exitOK, &apiv1.FsckResponse{}, "fsck")
	jsonStep(t, exitOK, &apiv1.GCResponse{}, "gc")
	jsonStep(t, exitOK, &apiv1.TrashListResponse{}, "trash", "list", "jsonc")
	jsonStep(t, exitOK, &apiv1.SourceListResponse{}, "source", "list", "jsonc")
	jsonStep(t, exitOK, &apiv1.RepoListResponse{}, "repo", "list")
	jsonStep(t, exitOK, &apiv1.LeaseRevokeResponse{}, "lease", "revoke", lf.ID)
	jsonStep(t, exitOK, &apiv1.DeletedResponse{}, "role", "delete", "r1")
	jsonStep(t, exitOK, &apiv1.DeletedResponse{}, "branch", "delete", "jsonc", "feat")
	jsonStep(t, exitOK, &versionInfo{}, "version")
	// A failure prints nothing on standard output.
	if code, out := runCLI(t, "branch", "show", "jsonc", "nope", "--json"); code != exitFailure || out != "" {
		t.Fatalf("failed show: exit %d, stdout %q", code, out)
	}
}
