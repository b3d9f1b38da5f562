package api

import (
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
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/sigv4"
	"github.com/agentnas/nas/source"
)

// Authenticator verifies a request's signature and returns its lease (nil
// for the owner).
type Authenticator interface {
	Principal(r *http.Request) (*lease.Lease, *sigv4.Result, error)
}

// Handler serves the control API.
type Handler struct {
	b      *branch.Service
	leases *auth.Leases // nil: leases off
	rec    Recorder     // nil: no flight recorder
	flush  func(ctx context.Context, run string) error
	onRead ReadFunc
	onDeny DenyFunc
	gates  *gate.Service // nil: no proposals and gates
	auth   Authenticator
	db     kv.DB
	log    *slog.Logger
	verbs  map[string]verb
	lazy   *source.Materializer // nil: no attached sources
}

// ReadFunc records a lease's read of key (an open when n is 0).
type ReadFunc func(ctx context.Context, l *lease.Lease, repo, branch, key string, e *manifest.Entry, off, n int64)

// DenyFunc records a refused lease request.
type DenyFunc func(ctx context.Context, l *lease.Lease, action, repo, branch, key string, v lease.Verdict)

// Recorder is the flight recorder as the control API uses it.
type Recorder interface {
	Append(ctx context.Context, e record.Event) (record.Event, error)
	List(ctx context.Context, f record.Filter, fn func(record.Event) error) error
	Verify(ctx context.Context, fn func(record.Problem)) (record.VerifyReport, error)
	Explain(ctx context.Context, repo, commit string) (*record.Explanation, error)
	ReadManifest(ctx context.Context, run string, fn func(record.Read) error) error
}

// Event is one consequential event, as the handlers describe it; it
// becomes a record.Event with the acting lease's provenance.
type Event struct {
	Kind   record.Kind
	Lease  *lease.Lease // the acting lease, nil for the owner
	Actor  string       // the access key acting
	Repo   string
	Branch string
	Path   string
	Commit string
	Detail string
}

// toRecord fills a record.Event from e.
func (e Event) toRecord() record.Event {
	r := record.Event{Kind: e.Kind, Repo: e.Repo, Branch: e.Branch,
		Subject: record.Subject{Path: e.Path, Commit: e.Commit}, Principal: e.Actor}
	if l := e.Lease; l != nil {
		r.Run, r.Principal, r.OnBehalfOf, r.Lease, r.Purpose = l.Run, l.Principal, l.OnBehalfOf, l.ID, l.Purpose
		r.ReadManifest = record.ManifestID(l.Run)
		if r.Repo == "" {
			r.Repo, r.Branch = l.Repo, l.Branch
		}
	}
	if e.Detail != "" {
		r.Details = map[string]string{"detail": e.Detail}
	}
	return r
}

// Config assembles a Handler.
type Config struct {
	Branches *branch.Service
	Leases   *auth.Leases
	Recorder Recorder
	// FlushReads, when set, writes a run's buffered read manifest before an
	// event that names it.
	FlushReads func(ctx context.Context, run string) error
	// OnRead records a lease's read in its run's read manifest; OnDeny
	// records a refusal (both shared with the S3 edge).
	OnRead ReadFunc
	OnDeny DenyFunc
	Gates  *gate.Service
	Auth   Authenticator
	Log    *slog.Logger
}

// verb handles one NOUN/VERB. It decodes its own arguments from body.
type verb struct {
	write bool
	lease bool // lease principals may call it (it checks the lease itself)
	fn    func(ctx context.Context, c *call) (any, error)
}

// call is one control-API request.
type call struct {
	principal string
	lease     *lease.Lease    // nil for the owner
	consumed  map[string]bool // single-use grants this call consumed
	body      json.RawMessage
}

func (c *call) decode(v any) error {
	dec := json.NewDecoder(strings.NewReader(string(c.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "bad request body: " + err.Error()}
	}
	return nil
}

// New returns the control API handler.
func New(c Config) *Handler {
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{b: c.Branches, leases: c.Leases, rec: c.Recorder, flush: c.FlushReads, onRead: c.OnRead, onDeny: c.OnDeny, gates: c.Gates,
		auth: c.Auth, db: c.Branches.Manifest().DB(), log: c.Log}
	h.verbs = h.routes()
	return h
}

// eventErr records an event; a failure must stop the operation.
func (h *Handler) eventErr(ctx context.Context, kind record.Kind, l *lease.Lease, repo, detail string) error {
	e := Event{Kind: kind, Lease: l, Repo: repo, Detail: detail}
	if l != nil && repo == "" {
		e.Repo, e.Branch = l.Repo, l.Branch
	}
	return h.eventErrFull(ctx, e)
}

// eventErrFull records e; a failure must stop the operation.
func (h *Handler) eventErrFull(ctx context.Context, e Event) error {
	if h.rec == nil {
		return nil
	}
	if e.Lease != nil && h.flush != nil {
		if err := h.flush(ctx, e.Lease.Run); err != nil {
			h.log.Warn("flushing read manifest", "run", e.Lease.Run, "err", err)
		}
	}
	if _, err := h.rec.Append(ctx, e.toRecord()); err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: "RecorderUnavailable", Retryable: true,
			Message: "the flight recorder could not record this operation, so it was not performed: " + err.Error()}
	}
	return nil
}

// Error is a control-API error.
type Error struct {
	Status    int            `json:"-"`
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	RequestID string         `json:"request_id"`
	Details   map[string]any `json:"details,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// toError is the control API's translation table.
func toError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	mk := func(status int, code string, retry bool) *Error {
		return &Error{Status: status, Code: code, Message: err.Error(), Retryable: retry}
	}
	switch {
	case errors.Is(err, sigv4.ErrMissingAuth), errors.Is(err, sigv4.ErrSignatureMismatch),
		errors.Is(err, sigv4.ErrUnknownKey), errors.Is(err, sigv4.ErrInvalidToken),
		errors.Is(err, sigv4.ErrExpired), errors.Is(err, sigv4.ErrRequestTimeTooSkewed),
		errors.Is(err, sigv4.ErrMalformedAuth), errors.Is(err, sigv4.ErrUnsupportedAuth):
		e := mk(http.StatusForbidden, "Unauthenticated", false)
		e.Details = map[string]any{"reason": authReason(err)}
		return e
	case errors.Is(err, branch.ErrProtected), errors.Is(err, branch.ErrImmutable):
		return mk(http.StatusForbidden, "AccessDenied", false)
	case errors.Is(err, branch.ErrNotFound), errors.Is(err, manifest.ErrNoSuchCommit):
		return mk(http.StatusNotFound, "NotFound", false)
	case errors.Is(err, branch.ErrExists):
		return mk(http.StatusConflict, "AlreadyExists", false)
	case errors.Is(err, manifest.ErrLazy):
		return mk(http.StatusNotImplemented, "NotImplemented", false)
	case errors.Is(err, branch.ErrQuotaExceeded):
		return mk(http.StatusForbidden, "QuotaExceeded", false)
	case errors.Is(err, branch.ErrNothingToCommit):
		return mk(http.StatusConflict, "NothingToCommit", false)
	case errors.Is(err, branch.ErrConflict), errors.Is(err, kv.ErrConflict):
		return mk(http.StatusConflict, "Conflict", true)
	case errors.Is(err, branch.ErrInvalid), errors.Is(err, lease.ErrInvalid), errors.Is(err, lease.ErrWider),
		errors.Is(err, lease.ErrMalformedPolicy):
		return mk(http.StatusBadRequest, "InvalidArgument", false)
	case errors.Is(err, lease.ErrNotFound):
		return mk(http.StatusNotFound, "NotFound", false)
	case errors.Is(err, lease.ErrRevoked), errors.Is(err, lease.ErrExpired):
		return mk(http.StatusForbidden, "LeaseEnded", false)
	case errors.Is(err, context.Canceled):
		return mk(499, "Canceled", true)
	}
	return &Error{Status: http.StatusInternalServerError, Code: "InternalError", Message: "internal error", Retryable: true}
}

// authReason says why a request was not authenticated, so a client can
// tell a dead lease from a bad key: "expired", "revoked", "unknown_key",
// "signature", "clock_skew", "request_expired", "anonymous" or "malformed".
func authReason(err error) string {
	switch {
	case errors.Is(err, lease.ErrExpired):
		return "expired"
	case errors.Is(err, lease.ErrRevoked):
		return "revoked"
	case errors.Is(err, sigv4.ErrUnknownKey), errors.Is(err, sigv4.ErrInvalidToken):
		return "unknown_key"
	case errors.Is(err, sigv4.ErrSignatureMismatch):
		return "signature"
	case errors.Is(err, sigv4.ErrRequestTimeTooSkewed):
		return "clock_skew"
	case errors.Is(err, sigv4.ErrExpired):
		return "request_expired"
	case errors.Is(err, sigv4.ErrMissingAuth):
		return "anonymous"
	}
	return "malformed"
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
		writeJSON(w, e.Status, map[string]any{"error": e})
		return
	}
	writeJSON(w, http.StatusOK, res)
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
	name, ok := strings.CutPrefix(r.URL.Path, "/_nas/v1/")
	if !ok {
		return nil, &Error{Status: http.StatusNotFound, Code: "NotFound", Message: "unknown API version; use /_nas/v1/NOUN/VERB"}
	}
	v, ok := h.verbs[name]
	if !ok {
		return nil, &Error{Status: http.StatusNotFound, Code: "UnknownOperation", Message: fmt.Sprintf("no operation %q", name)}
	}
	if r.Method != http.MethodPost {
		return nil, &Error{Status: http.StatusMethodNotAllowed, Code: "MethodNotAllowed", Message: "use POST"}
	}
	l, res, err := h.auth.Principal(r)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxBody {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: "TooLarge", Message: "request body over 4 MiB"}
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	// The idempotency key is common to every write; peel it off first.
	var common struct {
		IdempotencyKey string `json:"idempotency_key"`
	}
	_ = json.Unmarshal(body, &common)
	c := &call{principal: res.AccessKey, lease: l, body: stripKey(body)}
	if l != nil && !v.lease {
		return nil, denied(name + " is an owner operation; a lease cannot call it")
	}
	if l != nil {
		switch v := h.leases.Admit(r.Context(), l); v.Decision {
		case lease.Allow:
		case lease.Expired:
			return nil, &Error{Status: http.StatusForbidden, Code: "Unauthenticated", Message: v.Rule, Details: map[string]any{"reason": "expired"}}
		default:
			return nil, &Error{Status: http.StatusForbidden, Code: "QuotaExceeded", Message: v.Rule}
		}
	}
	if v.write && common.IdempotencyKey != "" {
		return h.idempotent(r.Context(), res.AccessKey+"\x00"+name+"\x00"+common.IdempotencyKey, func() (any, error) {
			return v.fn(r.Context(), c)
		})
	}
	return v.fn(r.Context(), c)
}

// stripKey removes idempotency_key from a JSON object so verbs can reject
// unknown fields.
func stripKey(body []byte) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if _, ok := m["idempotency_key"]; !ok {
		return body
	}
	delete(m, "idempotency_key")
	out, _ := json.Marshal(m)
	return out
}

// idempotencyTTL is how long a write's answer is kept for replay.
const idempotencyTTL = 24 * time.Hour

type replay struct {
	Expires int64           `json:"expires"`
	Result  json.RawMessage `json:"result"`
}

func (h *Handler) idempotent(ctx context.Context, key string, fn func() (any, error)) (any, error) {
	k := append([]byte("I/"), key...)
	var prev []byte
	err := h.db.View(ctx, func(r kv.Reader) error {
		v, err := r.Get(k)
		if err == nil {
			prev = v
		}
		if errors.Is(err, kv.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if prev != nil {
		var rp replay
		if json.Unmarshal(prev, &rp) == nil && time.Now().UnixNano() < rp.Expires {
			return rp.Result, nil
		}
	}
	res, err := fn()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	rp, _ := json.Marshal(replay{Expires: time.Now().Add(idempotencyTTL).UnixNano(), Result: b})
	if err := h.db.Update(ctx, func(txn kv.Txn) error { return txn.Set(k, rp) }); err != nil {
		h.log.Warn("storing idempotent answer", "err", err)
	}
	return json.RawMessage(b), nil
}

// timeNow is the clock of lease checks.
func timeNow() time.Time { return time.Now() }
