package ui

import (
	"embed"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
)

// Prefix is where the control room is served.
const Prefix = "/_nas/ui/"

// cookiePath scopes the session cookie to the gateway's own endpoints:
// the page and the control API, never an S3 key.
const cookiePath = "/_nas/"

//go:embed static
var static embed.FS

// assets are the page's files by the exact path they are served at.
var assets = map[string]string{
	Prefix:              "static/index.html",
	Prefix + "app.js":   "static/app.js",
	Prefix + "app.css":  "static/app.css",
	Prefix + "icon.svg": "static/icon.svg",
}

// Handler serves the control room.
type Handler struct {
	auth *auth.Authority
	log  *slog.Logger
}

// New returns the control room's handler; a is the gateway's door.
func New(a *auth.Authority, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{auth: a, log: log}
}

// Claims reports whether path is the control room's.
func Claims(p string) bool {
	return p == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(p, Prefix)
}

// SessionResponse answers sign-in and GET session: the session's CSRF
// token, which the page sends as x-nas-csrf, and when it ends.
type SessionResponse struct {
	CSRF      string    `json:"csrf"`
	ExpiresAt time.Time `json:"expires_at"`
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	e := access.From(r.Context())
	e.API, e.Operation = access.Control, "ui"
	switch p := r.URL.Path; {
	case p == strings.TrimSuffix(Prefix, "/"):
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	case p == Prefix+"signin":
		h.only(w, r, http.MethodPost, h.signIn)
	case p == Prefix+"signout":
		h.only(w, r, http.MethodPost, h.signOut)
	case p == Prefix+"session":
		h.only(w, r, http.MethodGet, h.session)
	default:
		h.only(w, r, http.MethodGet, h.asset)
	}
}

// secure sets the headers every answer of the control room carries.
func secure(hd http.Header) {
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "+
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	hd.Set("Cache-Control", "no-store")
}

// only runs fn for method m (GET also takes HEAD), else answers 405.
func (h *Handler) only(w http.ResponseWriter, r *http.Request, m string, fn func(http.ResponseWriter, *http.Request)) {
	if r.Method == m || m == http.MethodGet && r.Method == http.MethodHead {
		fn(w, r)
		return
	}
	w.Header().Set("Allow", m)
	fail(w, http.StatusMethodNotAllowed, apiv1.CodeMethodNotAllowed, "use "+m)
}

// asset serves one of the page's files, looked up by the exact path.
func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	name, ok := assets[r.URL.Path]
	if !ok {
		fail(w, http.StatusNotFound, apiv1.CodeNotFound, "no such page")
		return
	}
	b, err := static.ReadFile(name)
	if err != nil {
		h.log.Error("control room asset", "name", name, "err", err)
		fail(w, http.StatusInternalServerError, apiv1.CodeInternalError, "internal error")
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Write(b)
}

// maxForm bounds a sign-in form.
const maxForm = 4 << 10

// signIn checks the owner's keys from the form and sets the session
// cookie.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	if err := auth.SameOrigin(r); err != nil {
		fail(w, http.StatusForbidden, apiv1.CodeAccessDenied, "sign in from the control room's own page")
		return
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		fail(w, http.StatusUnsupportedMediaType, apiv1.CodeInvalidArgument, "send the form as application/x-www-form-urlencoded")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		fail(w, http.StatusBadRequest, apiv1.CodeInvalidArgument, "malformed form")
		return
	}
	s, err := h.auth.SignIn(r.Context(), r, r.PostForm.Get("access_key"), r.PostForm.Get("secret_key"))
	switch {
	case errors.Is(err, auth.ErrSignIn):
		fail(w, http.StatusUnauthorized, apiv1.CodeUnauthenticated, "those are not the owner's keys")
		return
	case errors.Is(err, auth.ErrSignInLimited):
		w.Header().Set("Retry-After", "10")
		fail(w, http.StatusTooManyRequests, "SlowDown", err.Error())
		return
	case err != nil:
		h.log.Error("control room sign-in", "err", err)
		fail(w, http.StatusServiceUnavailable, apiv1.CodeInternalError, "the session could not be stored")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: s.Token, Path: cookiePath, Expires: s.ExpiresAt,
		MaxAge: int(time.Until(s.ExpiresAt).Seconds()), HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	h.log.Info("control room: the owner signed in", "remote", r.RemoteAddr)
	reply(w, SessionResponse{CSRF: s.CSRF, ExpiresAt: s.ExpiresAt})
}

// session tells the page its CSRF token again (after a reload).
func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	s, err := h.auth.WebSession(r)
	switch {
	case errors.Is(err, auth.ErrCSRF):
		fail(w, http.StatusForbidden, apiv1.CodeAccessDenied, "ask from the control room's own page")
	case err != nil:
		fail(w, http.StatusUnauthorized, apiv1.CodeUnauthenticated, "not signed in")
	default:
		reply(w, SessionResponse{CSRF: s.CSRF, ExpiresAt: s.ExpiresAt})
	}
}

// signOut ends the session and clears the cookie.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	if err := h.auth.SignOut(r); err != nil {
		if errors.Is(err, auth.ErrDenied) {
			fail(w, http.StatusForbidden, apiv1.CodeAccessDenied, "sign out from the control room's own page")
			return
		}
		h.log.Error("control room sign-out", "err", err)
		fail(w, http.StatusServiceUnavailable, apiv1.CodeInternalError, "the session could not be ended")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: cookiePath, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}

// reply writes v as JSON.
func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// fail writes the control API's error document.
func fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(apiv1.ErrorDocument{Error: &apiv1.Error{Code: code, Message: msg}})
}
