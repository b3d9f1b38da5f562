package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/mcpserver"
	"github.com/agentnas/nas/nastest"
)

// mcpWorld is a gateway whose repository "kb2" holds, on main, docs/ and
// ref/ that its leases see and secret/ that they do not; its logs go to
// a buffer, to look for tokens in.
type mcpWorld struct {
	srv   *nastest.Server
	owner *client.Client
	logs  *lockedBuffer
}

// lockedBuffer is a buffer the server's goroutines may log to.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newMCPWorld(t *testing.T) *mcpWorld {
	t.Helper()
	logs := &lockedBuffer{}
	srv := nastest.Start(t, nastest.Options{Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	w := &mcpWorld{srv: srv, logs: logs, owner: client.New(client.Config{Endpoint: srv.Endpoint,
		Credentials: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}})}
	unprotected := false
	w.do(t, apiv1.RepoCreateRequest{Repo: "kb2", Protected: &unprotected}, nil)
	for k, v := range map[string]string{"docs/guide.md": "# Guide\n\nHow.\n", "ref/readme.txt": "reference\n", "secret/keys.md": "never shown\n"} {
		b := strings.NewReader(v)
		if _, err := w.owner.Put(t.Context(), client.Object{Repo: "kb2", Branch: "main", Key: k}, b, b.Size(), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.do(t, apiv1.CommitCreateRequest{Repo: "kb2", Branch: "main", Message: "seed"}, nil)
	w.do(t, apiv1.RolePutRequest{Role: lease.Role{Name: "agent", Repo: "kb2", View: []lease.Rule{{Path: "**", Actions: lease.Actions}}}}, nil)
	return w
}

func (w *mcpWorld) do(t *testing.T, req apiv1.Request, resp any) {
	t.Helper()
	if err := w.owner.Do(t.Context(), req, resp); err != nil {
		t.Fatalf("%s: %v", req.Op(), err)
	}
}

// lease issues a lease with an MCP token: read and write in docs/, read
// in ref/.
func (w *mcpWorld) lease(t *testing.T, run string) apiv1.Lease {
	t.Helper()
	var out apiv1.LeaseResponse
	w.do(t, apiv1.LeaseCreateRequest{Repo: "kb2", Role: "agent", Run: run, ForkFrom: "main", TTL: "1h", MCPToken: true,
		View: []lease.Rule{{Path: "docs/**", Actions: []lease.Action{lease.List, lease.Read, lease.Write}},
			{Path: "ref/**", Actions: []lease.Action{lease.List, lease.Read}}}}, &out)
	if !strings.HasPrefix(out.Lease.MCPToken, "nasmcp_") {
		t.Fatalf("lease/create with mcp_token answered token %q", out.Lease.MCPToken)
	}
	return out.Lease
}

func (w *mcpWorld) url() string { return w.srv.Endpoint + gateway.MCPPath }

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an SDK client session over streamable HTTP with token.
func (w *mcpWorld) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: w.url(), HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// callTool calls a tool and decodes its answer into out; it returns a
// tool error's text ("" on success).
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args, out any) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	return ""
}

func TestMCPOverHTTPSeesTheLeasesView(t *testing.T) {
	w := newMCPWorld(t)
	l := w.lease(t, "http")
	cs, err := w.connect(t, l.MCPToken)
	if err != nil {
		t.Fatal(err)
	}
	var root mcpserver.ListOutput
	if msg := callTool(t, cs, "nas_list", map[string]any{"path": "/"}, &root); msg != "" || !slices.Equal(root.Dirs, []string{"docs/", "ref/"}) {
		t.Fatalf("root lists %+v (%s)", root, msg)
	}
	for _, p := range []string{"secret/keys.md", "docs/none.md"} {
		if msg := callTool(t, cs, "nas_read", map[string]any{"path": p}, nil); !strings.HasPrefix(msg, "NotFound: ") {
			t.Fatalf("read %s: %q, want NotFound", p, msg)
		}
	}
	var wr mcpserver.WriteOutput
	if msg := callTool(t, cs, "nas_write", map[string]any{"path": "docs/notes.md", "content": "over HTTP\n", "intent": "notes"}, &wr); msg != "" {
		t.Fatal(msg)
	}
	var rd apiv1.FileReadResponse
	if msg := callTool(t, cs, "nas_read", map[string]any{"path": "docs/notes.md"}, &rd); msg != "" || rd.Content != "over HTTP\n" {
		t.Fatalf("read back %q (%s)", rd.Content, msg)
	}
	if msg := callTool(t, cs, "nas_write", map[string]any{"path": "ref/x.txt", "content": "no"}, nil); !strings.HasPrefix(msg, "AccessDenied: ") {
		t.Fatalf("write in ref/: %q", msg)
	}
	var log apiv1.CommitLogResponse
	w.do(t, apiv1.CommitLogRequest{Repo: "kb2", Ref: l.Branch, Page: apiv1.Page{Limit: 1}}, &log)
	if len(log.Commits) != 1 || log.Commits[0].Lease != l.ID {
		t.Fatalf("the write was not the lease's: %+v", log.Commits)
	}
	var lo mcpserver.LeaseOutput
	if msg := callTool(t, cs, "nas_lease", map[string]any{}, &lo); msg != "" || lo.Lease.ID != l.ID || lo.Lease.MCPToken != "" {
		t.Fatalf("nas_lease: %+v (%s)", lo.Lease, msg)
	}
}

// initialize is a raw MCP initialize request.
func initialize(t *testing.T, url string) *http.Request {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	return r
}

// wantRefused sends r and checks it is refused with 401, a Bearer
// challenge and nothing of MCP.
func wantRefused(t *testing.T, name string, r *http.Request, code string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var doc apiv1.ErrorDocument
	_ = json.Unmarshal(b, &doc)
	switch {
	case resp.StatusCode != http.StatusUnauthorized:
		t.Errorf("%s: status %d, want 401: %s", name, resp.StatusCode, b)
	case !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer "):
		t.Errorf("%s: WWW-Authenticate %q", name, resp.Header.Get("WWW-Authenticate"))
	case resp.Header.Get("Mcp-Session-Id") != "" || strings.Contains(string(b), "jsonrpc"):
		t.Errorf("%s: served MCP: %s", name, b)
	case doc.Error == nil || doc.Error.Code != code:
		t.Errorf("%s: answered %s, want code %s", name, b, code)
	}
}

func TestMCPRefusesAllButALiveLeasesToken(t *testing.T) {
	w := newMCPWorld(t)
	live := w.lease(t, "live")
	revoked := w.lease(t, "revoked")
	w.do(t, apiv1.LeaseRevokeRequest{LeaseID: revoked.ID}, nil)
	for name, c := range map[string]struct{ auth, code string }{
		"no token":      {"", "Unauthenticated"},
		"wrong token":   {"Bearer nasmcp_" + strings.Repeat("A", 43), "InvalidAccessKeyId"},
		"malformed":     {"Bearer " + live.MCPToken + "x", "Unauthenticated"},
		"basic":         {"Basic " + live.MCPToken, "Unauthenticated"},
		"owner key":     {"Bearer " + nastest.AccessKey, "Unauthenticated"},
		"owner secret":  {"Bearer " + nastest.SecretKey, "Unauthenticated"},
		"session token": {"Bearer " + live.SessionToken, "Unauthenticated"},
		"revoked lease": {"Bearer " + revoked.MCPToken, "InvalidAccessKeyId"},
	} {
		r := initialize(t, w.url())
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		wantRefused(t, name, r, c.code)
	}
	// The owner's SigV4 signature is no way in either.
	r := initialize(t, w.url())
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256Hex(body)
	r.Header.Set("X-Amz-Content-Sha256", sum)
	err := v4.NewSigner().SignHTTP(t.Context(), aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey},
		r, sum, "s3", "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, "owner sigv4", r, "Unauthenticated")

	// An expired lease, on the gateway's lease clock.
	w.srv.Gateway.Leases.SetClock(func() time.Time { return live.ExpiresAt.Add(time.Second) })
	r = initialize(t, w.url())
	r.Header.Set("Authorization", "Bearer "+live.MCPToken)
	wantRefused(t, "expired lease", r, "ExpiredToken")
	w.srv.Gateway.Leases.SetClock(time.Now)

	if _, err := w.connect(t, revoked.MCPToken); err == nil {
		t.Fatal("the SDK client connected with a revoked lease's token")
	}
	if _, err := w.connect(t, live.MCPToken); err != nil {
		t.Fatalf("the live lease's token: %v", err)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestMCPSessionStaysWithItsLease(t *testing.T) {
	w := newMCPWorld(t)
	a, b := w.lease(t, "a"), w.lease(t, "b")
	cs, err := w.connect(t, a.MCPToken)
	if err != nil {
		t.Fatal(err)
	}
	if msg := callTool(t, cs, "nas_lease", map[string]any{}, nil); msg != "" {
		t.Fatal(msg)
	}
	list := func(token string) int {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
		r, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url(), strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", cs.ID())
		r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK != strings.Contains(string(b), "nas_read") {
			t.Fatalf("status %d with %s", resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	if got := list(b.MCPToken); got != http.StatusForbidden {
		t.Fatalf("another lease's token on the session: %d, want 403", got)
	}
	if got := list(a.MCPToken); got != http.StatusOK {
		t.Fatalf("the session's own token: %d", got)
	}

	// Revoked: the next request is refused and the session is closed.
	w.do(t, apiv1.LeaseRevokeRequest{LeaseID: a.ID}, nil)
	if got := list(a.MCPToken); got != http.StatusUnauthorized {
		t.Fatalf("after revocation: %d, want 401", got)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nas_lease", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a revoked lease's session still calls tools")
	}
}

func TestMCPTokenIsShownOnce(t *testing.T) {
	w := newMCPWorld(t)
	l := w.lease(t, "once")
	cs, err := w.connect(t, l.MCPToken)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "nas_read", map[string]any{"path": "secret/keys.md"}, nil) // a refusal, recorded
	bad := initialize(t, w.url())
	bad.Header.Set("Authorization", "Bearer "+l.MCPToken+"x")
	wantRefused(t, "malformed", bad, "Unauthenticated")

	var got apiv1.LeaseGetResponse
	var list apiv1.LeaseListResponse
	var recs apiv1.RecordListResponse
	w.do(t, apiv1.LeaseGetRequest{LeaseID: l.ID}, &got)
	w.do(t, apiv1.LeaseListRequest{Repo: "kb2"}, &list)
	w.do(t, apiv1.RecordListRequest{Repo: "kb2", Page: apiv1.Page{Limit: 1000}}, &recs)
	if len(recs.Records) == 0 {
		t.Fatal("the flight recorder holds nothing")
	}
	secret := l.MCPToken[len("nasmcp_"):]
	for name, v := range map[string]any{"lease/get": got, "lease/list": list, "record/list": recs} {
		if b, _ := json.Marshal(v); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s shows the MCP token", name)
		}
	}
	if strings.Contains(w.logs.String(), secret) {
		t.Error("the logs hold the MCP token")
	}
	err = w.srv.Gateway.DB.View(t.Context(), func(r kv.Reader) error {
		return r.Scan(kv.Range{}, func(k, v []byte) error {
			if bytes.Contains(k, []byte(secret)) || bytes.Contains(v, []byte(secret)) {
				t.Errorf("kv key %q holds the MCP token", k)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMCPTokenIsTheOwners(t *testing.T) {
	w := newMCPWorld(t)
	l := w.lease(t, "parent")
	lc := client.New(client.Config{Endpoint: w.srv.Endpoint, Credentials: aws.Credentials{AccessKeyID: l.AccessKeyID,
		SecretAccessKey: l.SecretAccessKey, SessionToken: l.SessionToken}})
	err := lc.Do(t.Context(), apiv1.LeaseCreateRequest{Paths: []string{"docs/**"}, Actions: []string{"read"}, MCPToken: true}, nil)
	if client.Code(err) != apiv1.CodeAccessDenied {
		t.Fatalf("a lease minting an MCP token for its child: %v", err)
	}
}

// TestMCPSessionsEndWithTheServer: a session's standing event stream
// does not hold the gateway's shutdown until its timeout.
func TestMCPSessionsEndWithTheServer(t *testing.T) {
	w := newMCPWorld(t)
	l := w.lease(t, "stop")
	cs, err := w.connect(t, l.MCPToken)
	if err != nil {
		t.Fatal(err)
	}
	if msg := callTool(t, cs, "nas_lease", map[string]any{}, nil); msg != "" {
		t.Fatal(msg)
	}
	time.Sleep(200 * time.Millisecond) // the client opens its event stream after initializing
	start := time.Now()
	w.srv.Stop()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the gateway took %s to shut down with an MCP session open", d)
	}
}
