package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/mcpserver"
	"github.com/agentnas/nas/sigv4"
)

// MCPPath is where the gateway serves MCP over streamable HTTP (the path
// and everything below it) to remote agents, each authenticated by the
// MCP bearer token of one lease (nas lease create --mcp-token).
//
// Every request is authenticated by the door (auth.AuthenticateBearer),
// never by a signature or the owner's keys, so a revoked or expired
// lease is refused (401) on its next request, and its open sessions are
// closed then, or at the lease's expiry. A session is bound to the lease
// that opened it: a request on it with another lease's token is refused
// (403). A new session gets an mcpserver server on the lease's
// repository and branch whose tools call the gateway's own root handler
// in process (inProcess), signed with the lease's temporary credentials
// (auth.LeaseCredentials), so every tool call passes the same door,
// budgets and flight recorder as any client's request.
const MCPPath = "/_nas/mcp"

// Bounds of the MCP door.
const (
	// mcpMaxBody bounds one request body (a JSON-RPC message), as the
	// control API bounds its bodies.
	mcpMaxBody = 4 << 20
	// mcpIdle closes a session no request has used for this long.
	mcpIdle = 30 * time.Minute
)

// isMCPPath reports whether p is MCPPath or below it.
func isMCPPath(p string) bool { return p == MCPPath || strings.HasPrefix(p, MCPPath+"/") }

// mcpDoor serves MCPPath. It is safe for concurrent use.
type mcpDoor struct {
	auth *auth.Authority
	root http.Handler // the gateway's root handler, which the tools reach in process
	sdk  http.Handler // the SDK's streamable handler, behind its session binding
	log  *slog.Logger

	mu   sync.Mutex                      // guards open
	open map[[sha256.Size]byte]*mcpToken // by the SHA-256 of a bearer token
}

// mcpToken is what runs for one bearer token: the servers of its
// sessions, and the timer that closes them when its lease expires.
type mcpToken struct {
	servers []*mcp.Server
	timer   *time.Timer
}

type (
	principalKey struct{} // the request's *auth.Principal
	serverKey    struct{} // the *mcp.Server a new session runs on
)

// newMCPDoor returns the door; its root is set once the root handler
// exists.
func newMCPDoor(a *auth.Authority, log *slog.Logger) *mcpDoor {
	d := &mcpDoor{auth: a, log: log, open: map[[sha256.Size]byte]*mcpToken{}}
	h := mcp.NewStreamableHTTPHandler(d.server, &mcp.StreamableHTTPOptions{Logger: log, SessionTimeout: mcpIdle,
		MaxRequestBodyBytes: mcpMaxBody})
	// The SDK binds a session to the UserID of the request that opened
	// it and refuses (403) any other on it; tokenInfo names the lease
	// the door already authenticated.
	d.sdk = mcpauth.RequireBearerToken(d.tokenInfo, nil)(h)
	return d
}

// ServeHTTP authenticates r's bearer token and hands r to the SDK.
func (d *mcpDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := access.From(r.Context())
	e.API, e.Operation = access.MCP, mcpOperation(r.Method)
	p, err := d.auth.AuthenticateBearer(r)
	if err != nil {
		d.refuse(w, r, err)
		return
	}
	defer d.auth.Finish(r.Context(), p)
	e.Principal, e.Repo, e.Branch = p.Name(), p.Lease.Repo, p.Lease.Branch
	ctx := context.WithValue(r.Context(), principalKey{}, p)
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		s, err := d.newServer(r, p)
		if err != nil {
			d.log.Error("mcp: starting a session's server", "lease", p.Lease.ID, "err", err)
			writeMCPError(w, http.StatusInternalServerError, "InternalError", "the MCP server could not start")
			return
		}
		ctx = context.WithValue(ctx, serverKey{}, s)
	}
	d.sdk.ServeHTTP(w, r.WithContext(ctx))
}

// mcpOperation is the access log's bounded name of an MCP request.
func mcpOperation(method string) string {
	switch method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
		return method
	}
	return "other"
}

// tokenInfo tells the SDK which lease r acts as; ServeHTTP has
// authenticated r before it gets here.
func (d *mcpDoor) tokenInfo(ctx context.Context, _ string, _ *http.Request) (*mcpauth.TokenInfo, error) {
	p, ok := ctx.Value(principalKey{}).(*auth.Principal)
	if !ok || p.Lease == nil {
		return nil, mcpauth.ErrInvalidToken
	}
	return &mcpauth.TokenInfo{UserID: p.Lease.ID, Expiration: p.Lease.ExpiresAt}, nil
}

// server is the SDK's getServer: the server ServeHTTP made for a new
// session, nil for a request of an existing one (which never needs it).
func (d *mcpDoor) server(r *http.Request) *mcp.Server {
	s, _ := r.Context().Value(serverKey{}).(*mcp.Server)
	return s
}

// newServer makes the server of a new session of p's lease: its tools'
// client reaches the root handler in process, at the address the MCP
// client used (what a child lease's endpoint then says).
func (d *mcpDoor) newServer(r *http.Request, p *auth.Principal) (*mcp.Server, error) {
	cred, err := d.auth.LeaseCredentials(p)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	c := client.New(client.Config{Endpoint: scheme + "://" + r.Host,
		Credentials: aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey, SessionToken: cred.SessionToken},
		HTTP:        inProcessClient(&inProcess{h: d.root, remote: r.RemoteAddr, log: d.log})})
	s, err := mcpserver.New(mcpserver.Options{Client: c, Repo: p.Lease.Repo, Branch: p.Lease.Branch, Log: d.log})
	if err != nil {
		return nil, err
	}
	if tok, err := auth.ParseBearer(r.Header.Get("Authorization")); err == nil {
		d.track(sha256.Sum256([]byte(tok)), p.Lease.ExpiresAt, s)
	}
	return s, nil
}

// track remembers s as a server of the token whose hash is h, to close
// when its lease ends; servers whose sessions all ended are forgotten.
func (d *mcpDoor) track(h [sha256.Size]byte, expires time.Time, s *mcp.Server) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.open[h]
	if t == nil {
		t = &mcpToken{timer: time.AfterFunc(time.Until(expires), func() { d.closeToken(h) })}
		d.open[h] = t
	}
	t.servers = append(slices.DeleteFunc(t.servers, idle), s)
}

// idle reports whether s has no session.
func idle(s *mcp.Server) bool {
	for range s.Sessions() {
		return false
	}
	return true
}

// closeToken closes every session of the token whose hash is h.
func (d *mcpDoor) closeToken(h [sha256.Size]byte) {
	d.mu.Lock()
	t := d.open[h]
	delete(d.open, h)
	d.mu.Unlock()
	if t == nil {
		return
	}
	t.timer.Stop()
	for _, s := range t.servers {
		for ss := range s.Sessions() {
			ss.Close()
		}
	}
}

// closeAll closes every session of every token.
func (d *mcpDoor) closeAll() {
	d.mu.Lock()
	hs := slices.Collect(maps.Keys(d.open))
	d.mu.Unlock()
	for _, h := range hs {
		d.closeToken(h)
	}
}

// refuse answers a request the door refused: 401 with a Bearer
// challenge (503 when the door itself failed). A token whose lease has
// ended has its sessions closed: the request proved it holds the token.
func (d *mcpDoor) refuse(w http.ResponseWriter, r *http.Request, err error) {
	status, code := mcpRefusal(err)
	if status != http.StatusUnauthorized {
		d.log.Error("mcp: authenticating a bearer token", "err", err)
		writeMCPError(w, status, code, "the gateway could not check the token; retry")
		return
	}
	challenge := `Bearer realm="nas"`
	if !errors.Is(err, sigv4.ErrMissingAuth) {
		challenge += `, error="invalid_token", error_description="` + mcpHints[code] + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	writeMCPError(w, status, code, mcpHints[code])
	if reason := auth.FailureReason(err); reason == "expired" || reason == "revoked" {
		if tok, perr := auth.ParseBearer(r.Header.Get("Authorization")); perr == nil {
			d.closeToken(sha256.Sum256([]byte(tok)))
		}
	}
}

// mcpRefusal is this edge's one translation table: the door's refusal to
// a status and the code temporary credentials are refused with in S3.
func mcpRefusal(err error) (int, string) {
	switch {
	case errors.Is(err, lease.ErrExpired):
		return http.StatusUnauthorized, "ExpiredToken"
	case errors.Is(err, sigv4.ErrUnknownKey):
		return http.StatusUnauthorized, "InvalidAccessKeyId"
	case errors.Is(err, sigv4.ErrMissingAuth), errors.Is(err, auth.ErrBadBearer), errors.Is(err, sigv4.ErrInvalidToken):
		return http.StatusUnauthorized, apiv1.CodeUnauthenticated
	}
	return http.StatusServiceUnavailable, "ServiceUnavailable"
}

// mcpHints say what each refusal means; they never repeat the token.
var mcpHints = map[string]string{
	"ExpiredToken":            "the lease of this token has expired",
	"InvalidAccessKeyId":      "the token is unknown or its lease was revoked",
	apiv1.CodeUnauthenticated: "give the lease's MCP token as Authorization: Bearer nasmcp_...",
}

// writeMCPError answers status with the control API's error document.
func writeMCPError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(apiv1.ErrorDocument{Error: &apiv1.Error{Code: code, Message: msg, Retryable: status >= 500}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
