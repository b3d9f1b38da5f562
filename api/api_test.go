package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/nastest"
)

type client struct {
	t     *testing.T
	srv   *nastest.Server
	creds aws.Credentials
}

// call POSTs args to op and returns the status and decoded answer.
func (c *client) call(op string, args any) (int, map[string]any) {
	c.t.Helper()
	return c.callHeader(op, args, nil)
}

// callHeader is call with more headers (signed with the request).
func (c *client) callHeader(op string, args any, hdr http.Header) (int, map[string]any) {
	c.t.Helper()
	body, _ := json.Marshal(args)
	req, _ := http.NewRequest(http.MethodPost, c.srv.Endpoint+"/_nas/v1/"+op, bytes.NewReader(body))
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	if c.creds.AccessKeyID != "" {
		if err := v4.NewSigner().SignHTTP(context.Background(), c.creds, req, h, "s3", "us-east-1", time.Now()); err != nil {
			c.t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		c.t.Fatalf("%s: not JSON: %s", op, b)
	}
	return resp.StatusCode, out
}

func (c *client) ok(op string, args any) map[string]any {
	c.t.Helper()
	st, out := c.call(op, args)
	if st != 200 {
		c.t.Fatalf("%s: %d %v", op, st, out)
	}
	return out
}

func (c *client) fails(op string, args any, status int, code string) {
	c.t.Helper()
	st, out := c.call(op, args)
	e, _ := out["error"].(map[string]any)
	if st != status || e == nil || e["code"] != code || e["request_id"] == "" || e["message"] == "" {
		c.t.Fatalf("%s: got %d %v, want %d %s", op, st, out, status, code)
	}
}

func newClient(t *testing.T) *client {
	return &client{t: t, srv: nastest.Start(t), creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}}
}

func TestControlAPI(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	repo := c.ok("repo/create", map[string]any{"repo": "ctl"})["repo"].(map[string]any)
	if repo["name"] != "ctl" || repo["default_branch"] != "main" {
		t.Fatalf("repo: %v", repo)
	}
	c.fails("repo/create", map[string]any{"repo": "ctl"}, 409, "AlreadyExists")
	c.fails("repo/create", map[string]any{"repo": "Bad_Name"}, 400, "InvalidArgument")
	c.fails("repo/create", map[string]any{"repo": "x", "bogus": 1}, 400, "InvalidArgument")
	c.fails("branch/get", map[string]any{"repo": "ctl", "name": "nope"}, 404, "NotFound")

	// repo/create protects main: direct writes are refused.
	b := c.ok("branch/get", map[string]any{"repo": "ctl", "name": "main"})["branch"].(map[string]any)
	if b["protected"] != true {
		t.Fatalf("main of a control-API repo must be protected: %v", b)
	}
	c.fails("commit/create", map[string]any{"repo": "ctl", "branch": "main", "message": "x", "allow_empty": true}, 403, "AccessDenied")

	c.ok("branch/create", map[string]any{"repo": "ctl", "name": "work/a", "from": "main"})
	svc := c.srv.Gateway.Branches
	for i := 0; i < 5; i++ {
		if _, err := svc.Put(ctx, "ctl", "work/a", fmt.Sprintf("k%d", i), &manifest.Entry{ETag: "e"}, branch.Condition{}); err != nil {
			t.Fatal(err)
		}
	}
	changes := c.ok("changes/list", map[string]any{"repo": "ctl", "branch": "work/a", "limit": 2})
	if len(changes["changes"].([]any)) != 2 || changes["next_cursor"] != "k1" {
		t.Fatalf("changes page: %v", changes)
	}
	rest := c.ok("changes/list", map[string]any{"repo": "ctl", "branch": "work/a", "cursor": "k1"})
	if n := len(rest["changes"].([]any)); n != 3 || rest["next_cursor"] != "" {
		t.Fatalf("changes rest: %v", rest)
	}
	cm := c.ok("commit/create", map[string]any{"repo": "ctl", "branch": "work/a", "message": "five keys"})["commit"].(map[string]any)
	c.fails("commit/create", map[string]any{"repo": "ctl", "branch": "work/a", "message": "again"}, 409, "NothingToCommit")
	diff := c.ok("diff/list", map[string]any{"repo": "ctl", "from": "main", "to": cm["id"]})
	if len(diff["changes"].([]any)) != 5 {
		t.Fatalf("diff: %v", diff)
	}
	log := c.ok("commit/log", map[string]any{"repo": "ctl", "ref": "work/a", "limit": 1})
	if log["commits"].([]any)[0].(map[string]any)["message"] != "five keys" || log["next_cursor"] == "" {
		t.Fatalf("log: %v", log)
	}
	older := c.ok("commit/log", map[string]any{"repo": "ctl", "ref": "work/a", "cursor": log["next_cursor"]})
	if n := len(older["commits"].([]any)); n != 1 {
		t.Fatalf("log rest: %d commits", n)
	}
	c.ok("branch/protect", map[string]any{"repo": "ctl", "name": "work/a"})
	c.fails("branch/delete", map[string]any{"repo": "ctl", "name": "work/a"}, 403, "AccessDenied")
	c.ok("branch/unprotect", map[string]any{"repo": "ctl", "name": "work/a"})
	c.ok("branch/delete", map[string]any{"repo": "ctl", "name": "work/a"})
	fsck := c.ok("admin/fsck", map[string]any{})
	if fsck["ok"] != true {
		t.Fatalf("fsck: %v", fsck)
	}
}

func TestIdempotencyKey(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "idem", "protected": false})
	args := map[string]any{"repo": "idem", "name": "run-1", "idempotency_key": "k-123"}
	first := c.ok("branch/create", args)
	// A retry with the same key answers as the first time instead of
	// failing with AlreadyExists.
	second := c.ok("branch/create", args)
	if fmt.Sprint(first) != fmt.Sprint(second) {
		t.Fatalf("replay differs:\n%v\n%v", first, second)
	}
	args["idempotency_key"] = "k-456"
	c.fails("branch/create", args, 409, "AlreadyExists")

	// The same key for a different request is refused, not answered with
	// the first request's result.
	c.fails("branch/create", map[string]any{"repo": "idem", "name": "run-2", "idempotency_key": "k-123"}, 409, "Conflict")

	// A call that failed released its key: the retry runs.
	retry := map[string]any{"repo": "later", "name": "run-1", "idempotency_key": "k-789"}
	c.fails("branch/create", retry, 404, "NotFound")
	c.ok("repo/create", map[string]any{"repo": "later", "protected": false})
	c.ok("branch/create", retry)
}

// TestIdempotencyKeyConcurrent sends one create many times at once with
// one key: exactly one runs, and every caller gets its answer.
func TestIdempotencyKeyConcurrent(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "race", "protected": false})
	args := map[string]any{"repo": "race", "name": "run-1", "idempotency_key": "k-race"}
	const n = 8
	answers := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, out := c.call("branch/create", args)
			answers[i] = fmt.Sprint(st, out)
		}()
	}
	wg.Wait()
	for i, a := range answers {
		if !strings.HasPrefix(a, "200 ") || a != answers[0] {
			t.Fatalf("answer %d: %s\nfirst: %s", i, a, answers[0])
		}
	}
}

// TestIdempotencyClaimOfAnotherProcess: a claim no call here holds (another
// gateway's, or one a crash left) answers a retryable Conflict until it
// expires.
func TestIdempotencyClaimOfAnotherProcess(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "held", "protected": false})
	body, _ := json.Marshal(map[string]any{"name": "run-1", "repo": "held"})
	sum := sha256.Sum256(body)
	claim := fmt.Appendf(nil, `{"expires":%d,"request":%q,"pending":true}`, time.Now().Add(time.Hour).UnixNano(),
		base64.StdEncoding.EncodeToString(sum[:]))
	key := append([]byte(keyspace.Idempotency), nastest.AccessKey+"\x00branch/create\x00k-held"...)
	if err := c.srv.Gateway.DB.Update(context.Background(), func(txn kv.Txn) error { return txn.Set(key, claim) }); err != nil {
		t.Fatal(err)
	}
	st, out := c.call("branch/create", map[string]any{"repo": "held", "name": "run-1", "idempotency_key": "k-held"})
	e, _ := out["error"].(map[string]any)
	if st != 409 || e["code"] != "Conflict" || e["retryable"] != true {
		t.Fatalf("claimed key: %d %v", st, out)
	}
	c.fails("branch/get", map[string]any{"repo": "held", "name": "run-1"}, 404, "NotFound")
}

func TestControlAPIAuth(t *testing.T) {
	c := newClient(t)
	anon := &client{t: t, srv: c.srv}
	anon.fails("repo/list", map[string]any{}, 403, "Unauthenticated")
	wrong := &client{t: t, srv: c.srv, creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: "wrong"}}
	wrong.fails("repo/list", map[string]any{}, 403, "Unauthenticated")
	c.fails("no/such", map[string]any{}, 404, "UnknownOperation")
	resp, err := http.Get(c.srv.Endpoint + "/_nas/v1/repo/list")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET on the control API: %d", resp.StatusCode)
	}
}
