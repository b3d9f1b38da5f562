package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/nastest"
)

// hookReceiver checks each delivery's signature against the secret it is
// given, answers the first one 500, and keeps the events it accepted.
type hookReceiver struct {
	mu     sync.Mutex
	secret string
	failed bool
	bad    []string
	events []hook.Payload
	// body and sig are the last accepted delivery's, for nas hook verify.
	body []byte
	sig  string
}

func (rc *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := hook.Verify(rc.secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if !rc.failed {
		rc.failed = true
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	var p hook.Payload
	if err := json.Unmarshal(body, &p); err != nil {
		rc.bad = append(rc.bad, err.Error())
		return
	}
	rc.events = append(rc.events, p)
	rc.body, rc.sig = body, r.Header.Get(hook.SignatureHeader)
}

func (rc *hookReceiver) names() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, p := range rc.events {
		out = append(out, p.Event)
	}
	return out
}

// TestHooksThroughTheGateway: `nas hook add` registers a receiver; a
// branch, a commit, a proposal that waits at a gate, its approval and the
// merge reach it signed and in order, the first failed delivery retried
// before anything later; `nas hook deliveries` shows every attempt.
func TestHooksThroughTheGateway(t *testing.T) {
	srv := nastest.Start(t, nastest.Options{Hooks: hook.Options{Poll: 10 * time.Millisecond, Backoff: 50 * time.Millisecond}})
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	c := ownerClient(srv.Endpoint)
	rc := &hookReceiver{}
	recv := httptest.NewServer(rc)
	defer recv.Close()
	mustCLI(t, "repo", "create", "hooked")
	var added apiv1.HookResponse
	must(t, json.Unmarshal([]byte(mustCLI(t, "hook", "add", "hooked", recv.URL+"/in", "--events",
		"gate.pending,gate.decided,commit,merge,branch.created", "--json")), &added))
	rc.mu.Lock()
	rc.secret = added.Hook.Secret
	rc.mu.Unlock()

	objs := &objectReceiver{}
	orecv := httptest.NewServer(objs)
	defer orecv.Close()
	var oadded apiv1.HookResponse
	must(t, json.Unmarshal([]byte(mustCLI(t, "hook", "add", "hooked", orecv.URL, "--events", "object.created,object.removed", "--json")), &oadded))
	objs.mu.Lock()
	objs.secret = oadded.Hook.Secret
	objs.mu.Unlock()

	mustCLI(t, "branch", "create", "hooked", "feat", "--from", "main")
	if _, err := c.Put(context.Background(), nasclient.Object{Repo: "hooked", Branch: "feat", Key: "secrets/x.env"}, strings.NewReader("TOKEN=1"), 7, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "commit", "hooked", "feat", "-m", "a secret file")
	mustCLI(t, "policy", "set", "hooked", "../../docs/examples/rules.yaml")
	runCLI(t, "propose", "hooked", "feat", "--into", "main") // waits at a gate: exit 3
	var gl apiv1.GateListResponse
	must(t, json.Unmarshal([]byte(mustCLI(t, "gate", "list", "--status", "pending", "--json")), &gl))
	if len(gl.Gates) != 1 {
		t.Fatalf("gates: %+v", gl)
	}
	mustCLI(t, "gate", "approve", gl.Gates[0].ID)

	want := "branch.created,commit,gate.pending,gate.decided,merge"
	deadline := time.Now().Add(15 * time.Second)
	for strings.Join(rc.names(), ",") != want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Join(rc.names(), ","); got != want {
		t.Fatalf("delivered %s, want %s\n%s", got, want, mustCLI(t, "hook", "deliveries", "hooked", added.Hook.ID))
	}
	rc.mu.Lock()
	if len(rc.bad) != 0 || rc.events[1].Branch != "feat" || rc.events[0].Repo != "hooked" {
		t.Errorf("bad deliveries %v; events %+v", rc.bad, rc.events)
	}
	// gate.pending and gate.decided link to the card in the control room.
	for _, p := range rc.events[2:4] {
		if p.Link != "/_nas/ui/#/gate/"+gl.Gates[0].ID {
			t.Errorf("%s links %q, want the card of %s", p.Event, p.Link, gl.Gates[0].ID)
		}
	}
	if rc.events[1].Link != "" {
		t.Errorf("a commit links %q", rc.events[1].Link)
	}
	rc.mu.Unlock()
	// The last attempt is logged just after its answer: wait for it.
	var out string
	for {
		out = mustCLI(t, "hook", "deliveries", "hooked", added.Hook.ID)
		if strings.Count(out, "\n") >= 6 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 6 || !strings.Contains(lines[5], "try 1\t500") ||
		!strings.Contains(lines[4], "try 2\t200") {
		t.Errorf("deliveries:\n%s", out)
	}
	if out := mustCLI(t, "hook", "list", "hooked"); !strings.Contains(out, added.Hook.ID) || strings.Contains(out, added.Hook.Secret) {
		t.Errorf("hook list shows %q", out)
	}
	// Object events: the run's commit on feat, then the merge into main,
	// then a removal, in the shape of S3's notifications.
	mustCLI(t, "rm", "hooked@feat:/secrets/x.env")
	mustCLI(t, "commit", "hooked", "feat", "-m", "drop it")
	wantObj := "ObjectCreated:Put hooked feat secrets/x.env,ObjectCreated:Put hooked main secrets/x.env,ObjectRemoved:Delete hooked feat secrets/x.env"
	for objs.summary() != wantObj && time.Now().Before(deadline.Add(10*time.Second)) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := objs.summary(); got != wantObj {
		t.Fatalf("object events %s, want %s", got, wantObj)
	}

	// A receiver written as a script checks a delivery with nas hook verify.
	rc.mu.Lock()
	body, sig := rc.body, rc.sig
	rc.mu.Unlock()
	t.Setenv("NAS_HOOK_SECRET", added.Hook.Secret)
	if code := verifyCLI(t, body, sig); code != 0 {
		t.Errorf("nas hook verify of a delivery: exit %d", code)
	}
	if code := verifyCLI(t, append(body, ' '), sig); code == 0 {
		t.Error("nas hook verify passed a changed body")
	}

	mustCLI(t, "hook", "remove", "hooked", added.Hook.ID)
	if code, _ := runCLI(t, "hook", "add", "hooked", "ftp://example.org/", "--events", "commit"); code == 0 {
		t.Error("an ftp hook was accepted")
	}
}

// objectReceiver keeps the S3 event records of signed deliveries.
type objectReceiver struct {
	mu      sync.Mutex
	secret  string
	records []hook.S3Record
}

func (rc *objectReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var ev hook.S3Event
	if hook.Verify(rc.secret, r.Header.Get(hook.SignatureHeader), body, time.Now(), 5*time.Minute) != nil || json.Unmarshal(body, &ev) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.records = append(rc.records, ev.Records...)
}

func (rc *objectReceiver) summary() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, r := range rc.records {
		out = append(out, r.EventName+" "+r.S3.Bucket.Name+" "+r.NAS.Branch+" "+r.S3.Object.Key)
	}
	return strings.Join(out, ",")
}

// verifyCLI runs nas hook verify with body on standard input.
func verifyCLI(t *testing.T, body []byte, sig string) int {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "body")
	must(t, err)
	_, err = f.Write(body)
	must(t, err)
	_, err = f.Seek(0, io.SeekStart)
	must(t, err)
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin; f.Close() }()
	code, _ := runCLI(t, "hook", "verify", "--signature", sig)
	return code
}
