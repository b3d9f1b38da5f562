package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/hook"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/search"
	"github.com/agentnas/nas/source"
)

// Handler serves the control API.
type Handler struct {
	b       *branch.Service
	auth    *auth.Authority
	leases  *auth.Leases  // nil: leases off
	rec     Recorder      // nil: no flight recorder
	gates   *gate.Service // nil: no proposals and gates
	db      kv.DB
	log     *slog.Logger
	verbs   map[string]verb
	lazy    *source.Materializer // nil: no attached sources
	sources *source.Registry     // nil: no attached sources
	idem    inflight             // idempotent calls this process runs
	search  *search.Service      // nil: no full-text search
	hooks   *hook.Store          // nil: no webhooks
	checks  *check.Service       // nil: no pre-merge checks
}

// Recorder is the flight recorder as the control API reads it (events
// are written through the door, auth.Authority.Record).
type Recorder interface {
	List(ctx context.Context, f record.Filter, fn func(record.Event) error) error
	Verify(ctx context.Context, fn func(record.Problem)) (record.VerifyReport, error)
	Explain(ctx context.Context, repo, commit string) (*record.Explanation, error)
	ReadManifest(ctx context.Context, run string, fn func(record.Read) error) error
}

// Config assembles a Handler.
type Config struct {
	Branches *branch.Service
	// Auth is the door: every call is authenticated and authorized,
	// charged and recorded through it.
	Auth     *auth.Authority
	Recorder Recorder
	Gates    *gate.Service
	Log      *slog.Logger
}

// verb handles one NOUN/VERB. It decodes its own arguments from body.
type verb struct {
	write bool
	lease bool // lease principals may call it (it authorizes each target itself)
	fn    func(ctx context.Context, c *call) (any, error)
}

// call is one control-API request.
type call struct {
	name string          // NOUN/VERB
	p    *auth.Principal // who calls
	body json.RawMessage
}

func (c *call) decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalid("bad request body: " + err.Error())
	}
	if dec.More() {
		return invalid("bad request body: more than one JSON value")
	}
	return nil
}

// New returns the control API handler.
func New(c Config) *Handler {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{b: c.Branches, auth: c.Auth, leases: c.Auth.Leases(), rec: c.Recorder, gates: c.Gates, db: c.Branches.Manifest().DB(), log: c.Log}
	h.verbs = h.routes()
	return h
}

// record writes e with the caller's provenance; a failure must stop the
// operation ("record first, then act").
func (h *Handler) record(ctx context.Context, c *call, e record.Event) error {
	if err := h.auth.Record(ctx, c.p, e); err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: apiv1.CodeRecorderUnavailable, Retryable: true,
			Message: "the flight recorder could not record this operation, so it was not performed: " + err.Error()}
	}
	return nil
}

// detail is the Details map of an event with one free-text detail.
func detail(s string) map[string]string {
	if s == "" {
		return nil
	}
	return map[string]string{"detail": s}
}

func requestID() string {
	var b [8]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := requestID()
	w.Header().Set("x-amz-request-id", id)
	h.describe(r, id)
	if h.serveStream(w, r) {
		return
	}
	res, err := h.serve(r)
	if err != nil {
		e := toError(err)
		if e.Status >= 500 {
			h.log.Error("control api", "request_id", id, "path", r.URL.Path, "err", err)
		}
		e.RequestID = id
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// describe tells the access log which operation r asks for: a name
// from the routes table, or "unknown".
func (h *Handler) describe(r *http.Request, id string) {
	e := access.From(r.Context())
	e.API, e.RequestID, e.Operation = access.Control, id, "unknown"
	name, _ := strings.CutPrefix(r.URL.Path, apiv1.Prefix)
	if _, ok := h.verbs[name]; ok || name == "repo/export" || name == "repo/import" {
		e.Operation = name
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"InternalError","message":"encoding the response failed","retryable":true}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

const maxBody = 4 << 20

func (h *Handler) serve(r *http.Request) (any, error) {
	name, ok := strings.CutPrefix(r.URL.Path, apiv1.Prefix)
	if !ok {
		return nil, &Error{Status: http.StatusNotFound, Code: apiv1.CodeNotFound, Message: "unknown API version; use /_nas/v1/NOUN/VERB"}
	}
	v, ok := h.verbs[name]
	if !ok {
		return nil, &Error{Status: http.StatusNotFound, Code: apiv1.CodeUnknownOperation, Message: fmt.Sprintf("no operation %q", name)}
	}
	if r.Method != http.MethodPost {
		return nil, &Error{Status: http.StatusMethodNotAllowed, Code: apiv1.CodeMethodNotAllowed, Message: "use POST"}
	}
	p, err := h.auth.Authenticate(r, auth.Control)
	if err != nil {
		return nil, err
	}
	access.From(r.Context()).Principal = p.Name()
	defer h.auth.Finish(r.Context(), p)
	defer p.Signed.Body.Close()
	if !v.lease {
		if err := h.auth.OwnerOnly(r.Context(), p, name, auth.Target{}); err != nil {
			return nil, err
		}
	}
	body, err := io.ReadAll(io.LimitReader(p.Signed.Body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxBody {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: apiv1.CodeTooLarge, Message: "request body over 4 MiB"}
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	key, body := idempotencyKey(r.Header, body)
	c := &call{name: name, p: p, body: body}
	if v.write && key != "" {
		return h.idempotent(r.Context(), p.AccessKey+"\x00"+name+"\x00"+key, c.body, func() (any, error) {
			return v.fn(r.Context(), c)
		})
	}
	return v.fn(r.Context(), c)
}

// idempotencyKey is a write's idempotency key: the header's, else the
// body's idempotency_key, which it peels off the body it returns.
func idempotencyKey(h http.Header, body []byte) (string, []byte) {
	if k := h.Get(apiv1.IdempotencyHeader); k != "" {
		return k, body
	}
	var common struct {
		IdempotencyKey string `json:"idempotency_key"`
	}
	_ = json.Unmarshal(body, &common)
	if common.IdempotencyKey == "" {
		return "", body
	}
	return common.IdempotencyKey, stripKey(body)
}

// isTimeout reports a timeout reading the request (a body that stalled
// or trickled).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
