package sts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentnas/nas/access"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/sigv4"
)

// account is the fixed account ID in the ARNs the gateway reports.
const account = "000000000000"

// Handler serves STS.
type Handler struct {
	auth     *auth.Authority
	leases   *auth.Leases
	branches *branch.Service
	log      *slog.Logger
}

// New returns an STS handler.
func New(a *auth.Authority, branches *branch.Service, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{auth: a, leases: a.Leases(), branches: branches, log: log}
}

// IsSTS reports whether a request is an STS call: POST / with a form body,
// or GET / with an Action query parameter.
func IsSTS(r *http.Request) bool {
	if r.URL.Path != "/" {
		return false
	}
	if r.Method == http.MethodGet {
		return r.URL.Query().Has("Action")
	}
	return r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
}

// stsError is an STS error response.
type stsError struct {
	Status  int
	Code    string
	Message string
}

func (e *stsError) Error() string { return e.Code + ": " + e.Message }

func fail(status int, code, format string, a ...any) *stsError {
	return &stsError{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := requestID()
	w.Header().Set("x-amzn-RequestId", id)
	e := access.From(r.Context())
	e.API, e.RequestID, e.Operation = access.STS, id, "unknown"
	out, err := h.serve(w, r)
	if err != nil {
		var se *stsError
		if !errors.As(err, &se) {
			se = h.mapError(err)
		}
		writeXML(w, se.Status, errorResponse{Xmlns: xmlns, Error: errorBody{Type: "Sender", Code: se.Code, Message: se.Message}, RequestID: id})
		return
	}
	setRequestID(out, id)
	writeXML(w, http.StatusOK, out)
}

// mapError is the STS edge's translation table.
func (h *Handler) mapError(err error) *stsError {
	switch {
	case errors.Is(err, lease.ErrMalformedPolicy):
		return fail(400, "MalformedPolicyDocument", "%v", err)
	case errors.Is(err, lease.ErrWider), errors.Is(err, lease.ErrInvalid), errors.Is(err, branch.ErrInvalid):
		return fail(400, "ValidationError", "%v", err)
	case errors.Is(err, lease.ErrNotFound), errors.Is(err, branch.ErrNotFound):
		return fail(403, "AccessDenied", "not authorized to perform sts:AssumeRole: %v", err)
	case errors.Is(err, auth.ErrNotTrusted):
		// The same words whatever did not match (the record says which).
		return fail(403, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
	case errors.Is(err, auth.ErrOverBudget), errors.Is(err, auth.ErrDenied):
		return fail(403, "AccessDenied", "%v", err)
	case errors.Is(err, auth.ErrIdentityTokenExpired):
		return fail(400, "ExpiredTokenException", "%v", err)
	case errors.Is(err, auth.ErrInvalidIdentityToken):
		return fail(400, "InvalidIdentityToken", "%v", err)
	case errors.Is(err, auth.ErrIDPCommunication):
		return fail(400, "IDPCommunicationError", "%v", err)
	case errors.Is(err, auth.ErrInvalid):
		return fail(400, "InvalidParameterValue", "%v", err)
	case errors.Is(err, auth.ErrUnsignedHeaders):
		return fail(403, "AccessDenied", "There were headers present in the request which were not signed")
	case errors.Is(err, auth.ErrUnsignedPayload):
		return fail(403, "IncompleteSignature", "STS requires a header-signed request with a signed payload")
	case errors.Is(err, lease.ErrExpired):
		return fail(400, "ExpiredToken", "The security token included in the request is expired")
	case errors.Is(err, sigv4.ErrUnknownKey), errors.Is(err, sigv4.ErrInvalidToken):
		return fail(403, "InvalidClientTokenId", "The security token included in the request is invalid")
	case errors.Is(err, sigv4.ErrSignatureMismatch):
		return fail(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided")
	case errors.Is(err, sigv4.ErrMissingAuth):
		return fail(403, "MissingAuthenticationToken", "Request is missing Authentication Token")
	case errors.Is(err, sigv4.ErrRequestTimeTooSkewed), errors.Is(err, sigv4.ErrExpired):
		return fail(400, "RequestExpired", "Request has expired")
	case errors.Is(err, sigv4.ErrMalformedAuth), errors.Is(err, sigv4.ErrUnsupportedAuth), errors.Is(err, sigv4.ErrMissingDate):
		return fail(400, "IncompleteSignature", "%v", err)
	case errors.Is(err, lease.ErrRevoked):
		return fail(400, "ExpiredToken", "the calling lease was revoked")
	case errors.Is(err, sigv4.ErrInvalidContentSHA256), errors.Is(err, sigv4.ErrContentSHA256Mismatch),
		errors.Is(err, sigv4.ErrIncompleteBody), errors.Is(err, sigv4.ErrMalformedChunk):
		return fail(400, "InvalidParameterValue", "%v", err)
	case isTimeout(err):
		return fail(400, "RequestTimeout", "%v", err)
	}
	h.log.Error("sts", "err", err)
	return fail(500, "InternalFailure", "internal error")
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (any, error) {
	e := access.From(r.Context())
	form, body, err := readForm(r)
	if err != nil {
		return nil, err
	}
	switch a := form.Get("Action"); a {
	case "AssumeRole", "AssumeRoleWithWebIdentity", "GetSessionToken", "GetCallerIdentity":
		e.Operation = a // a bounded name; any other stays "unknown"
	}
	if form.Get("Action") == "AssumeRoleWithWebIdentity" {
		// No key signs it: the token is the proof, checked at the door.
		e.Principal = "web-identity"
		return h.assumeRoleWithWebIdentity(r.Context(), r, form)
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // the signature covers it
	p, err := h.auth.Authenticate(r, auth.STS)
	if err != nil {
		return nil, err
	}
	e.Principal = p.Name()
	defer h.auth.Finish(r.Context(), p)
	defer p.Signed.Body.Close()
	if form, err = signedForm(r, p); err != nil {
		return nil, err
	}
	switch form.Get("Action") {
	case "AssumeRole":
		if h.leases == nil {
			return nil, fail(400, "InvalidAction", "leases are not enabled on this gateway")
		}
		return h.assumeRole(r.Context(), p, form)
	case "GetSessionToken":
		return h.getSessionToken(r.Context(), p, form)
	case "GetCallerIdentity":
		return callerIdentity(p.Lease, p.AccessKey), nil
	case "":
		return nil, fail(400, "MissingAction", "Action is required")
	}
	return nil, fail(400, "InvalidAction", "%q is not an STS action this gateway serves (AssumeRole, AssumeRoleWithWebIdentity, GetSessionToken, GetCallerIdentity)", form.Get("Action"))
}

// maxForm bounds an STS request body.
const maxForm = 64 << 10

// readForm reads the request's parameters, unverified: the query and,
// for a POST, the form body (at most maxForm bytes), which it also
// returns so the signature can be checked over the same bytes.
func readForm(r *http.Request) (url.Values, []byte, error) {
	form := r.URL.Query()
	if r.Method != http.MethodPost {
		return form, nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxForm+1))
	if err != nil {
		return nil, nil, err
	}
	if len(body) > maxForm {
		return nil, nil, fail(400, "ValidationError", "request body too large")
	}
	if f, err := url.ParseQuery(string(body)); err == nil {
		for k, vs := range f {
			form[k] = vs
		}
	} // else the signed path reports it (an aws-chunked body parses there)
	return form, body, nil
}

// signedForm reads the parameters again through the verified body, so a
// signed action acts only on what the signature covers.
func signedForm(r *http.Request, p *auth.Principal) (url.Values, error) {
	form := r.URL.Query()
	if r.Method != http.MethodPost {
		return form, nil
	}
	body, err := io.ReadAll(io.LimitReader(p.Signed.Body, maxForm+1))
	if err != nil {
		return nil, err
	}
	return form, mergeForm(form, body)
}

// mergeForm adds a form body's parameters to form; the body's win.
func mergeForm(form url.Values, body []byte) error {
	f, err := url.ParseQuery(string(body))
	if err != nil {
		return fail(400, "MalformedQueryString", "%v", err)
	}
	for k, vs := range f {
		form[k] = vs
	}
	return nil
}

// roleName extracts the role from "arn:aws:iam::ACCOUNT:role/[PATH/]NAME".
func roleName(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "iam" || !strings.HasPrefix(parts[5], "role/") {
		return "", fail(400, "ValidationError", "RoleArn %q is not arn:aws:iam::ACCOUNT:role/NAME", arn)
	}
	name := parts[5][strings.LastIndexByte(parts[5], '/')+1:]
	if name == "" {
		return "", fail(400, "ValidationError", "RoleArn %q names no role", arn)
	}
	return name, nil
}

// validSession checks RoleSessionName as AWS does: 2-64 of [\w+=,.@-].
func validSession(s string) error {
	if len(s) < 2 || len(s) > 64 {
		return fail(400, "ValidationError", "RoleSessionName must be 2-64 characters")
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_+=,.@-", c)) {
			return fail(400, "ValidationError", "RoleSessionName may contain only [\\w+=,.@-]")
		}
	}
	return nil
}

// branchSegment makes a run name a branch segment. A name that already is
// one ([a-z0-9][a-z0-9._-]*) is kept; any other is lower-cased, its other
// characters turned into '-', and a hash of the exact name appended, so
// two different session names never share a branch ("JOB-7" and "job-7"
// differ).
func branchSegment(run string) string {
	valid := run != ""
	for i := 0; i < len(run); i++ {
		c := run[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')) {
			valid = false
		}
	}
	if valid {
		return run
	}
	b := []byte(strings.ToLower(run))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= '0' && b[0] <= '9') {
		b = append([]byte("r"), b...)
	}
	sum := sha256.Sum256([]byte(run))
	return string(b) + "-" + hex.EncodeToString(sum[:4])
}

// assumeInput is what AssumeRole and AssumeRoleWithWebIdentity share:
// the role, the run (RoleSessionName), the lifetime and the session
// policy.
type assumeInput struct {
	role, session, policy, purpose string
	ttl                            time.Duration
}

func parseAssume(form url.Values) (*assumeInput, error) {
	roleArn, session := form.Get("RoleArn"), form.Get("RoleSessionName")
	if roleArn == "" || session == "" {
		return nil, fail(400, "MissingParameter", "RoleArn and RoleSessionName are required")
	}
	if err := validSession(session); err != nil {
		return nil, err
	}
	role, err := roleName(roleArn)
	if err != nil {
		return nil, err
	}
	in := &assumeInput{role: role, session: session, policy: form.Get("Policy"), purpose: form.Get("Purpose")}
	if v := form.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 900 || n > int(lease.MaxTTL/time.Second) {
			return nil, fail(400, "ValidationError", "DurationSeconds must be 900-%d", int(lease.MaxTTL/time.Second))
		}
		in.ttl = time.Duration(n) * time.Second
	}
	return in, nil
}

// assumer is who assumes a role: the owner or a lease (p), or a web
// identity (web, with p nil).
type assumer struct {
	p     *auth.Principal
	actor string // the access key, or the web identity
	web   *lease.WebIdentity
}

func (h *Handler) assumeRole(ctx context.Context, p *auth.Principal, form url.Values) (any, error) {
	in, err := parseAssume(form)
	if err != nil {
		return nil, err
	}
	who := assumer{p: p, actor: p.AccessKey}
	var l *lease.Lease
	var cred auth.Credentials
	if caller := p.Lease; caller != nil {
		l, cred, err = h.assumeChild(ctx, caller, in)
	} else {
		var env *lease.Role
		if env, err = h.leases.GetRole(ctx, in.role); err != nil {
			return nil, err
		}
		l, cred, err = h.issueInRole(ctx, who, env, in)
	}
	if err != nil {
		return nil, err
	}
	if err := h.recordIssued(ctx, who, l, "sts:AssumeRole"); err != nil {
		return nil, err
	}
	return &assumeRoleResponse{Xmlns: xmlns, Result: assumeRoleResult{Credentials: wireCredentials(cred), AssumedRoleUser: roleUser(l)}}, nil
}

// assumeChild mints a child of the calling lease: same repository,
// branch and run, never wider.
func (h *Handler) assumeChild(ctx context.Context, caller *lease.Lease, in *assumeInput) (*lease.Lease, auth.Credentials, error) {
	if in.ttl > 0 && time.Now().Add(in.ttl).After(caller.ExpiresAt) {
		return nil, auth.Credentials{}, fail(400, "ValidationError", "DurationSeconds outlives the calling lease (it expires %s)", caller.ExpiresAt.Format(time.RFC3339))
	}
	req := lease.Request{TTL: in.ttl, Purpose: in.purpose, View: caller.View}
	if in.policy != "" {
		rules, err := lease.ParsePolicy(in.policy, caller.Repo)
		if err != nil {
			return nil, auth.Credentials{}, err
		}
		if req.View = lease.Intersect(caller.View, rules); len(req.View) == 0 {
			return nil, auth.Credentials{}, fail(400, "ValidationError", "the session policy leaves nothing of the calling lease")
		}
	}
	req.Repo, req.Branch, req.Role, req.Principal, req.Parent = caller.Repo, caller.Branch, caller.Role, caller.Principal, caller
	return h.leases.Issue(ctx, req)
}

// issueInRole issues a lease of role env to the run in.session: the one
// path by which AssumeRole (for the owner) and AssumeRoleWithWebIdentity
// hand out a role's leases. The run keeps its branch across calls.
func (h *Handler) issueInRole(ctx context.Context, who assumer, env *lease.Role, in *assumeInput) (*lease.Lease, auth.Credentials, error) {
	req := lease.Request{TTL: in.ttl, Purpose: in.purpose, WebIdentity: who.web}
	if in.policy != "" {
		rules, err := lease.ParsePolicy(in.policy, env.Repo)
		if err != nil {
			return nil, auth.Credentials{}, err
		}
		if req.View = lease.Intersect(env.View, rules); len(req.View) == 0 {
			return nil, auth.Credentials{}, fail(400, "ValidationError", "the session policy leaves nothing of role %s", env.Name)
		}
	}
	if err := env.WithinRole(&req); err != nil {
		return nil, auth.Credentials{}, err
	}
	req.Run = in.session
	if req.OnBehalfOf == "" {
		req.OnBehalfOf = who.actor
	}
	if req.Principal == "" {
		req.Principal = "role:" + env.Name
	}
	var err error
	if req.Branch, err = h.runBranch(ctx, who, env, in.session, req.TTL); err != nil {
		return nil, auth.Credentials{}, err
	}
	if _, err := manifest.ParseCommitID(env.ForkFrom); env.Branch == "" && err != nil {
		req.ForkedFrom = env.ForkFrom
	}
	return h.leases.Issue(ctx, req)
}

// recordIssued records a lease's issue (revoking it if the record
// fails: record first, then act).
func (h *Handler) recordIssued(ctx context.Context, who assumer, l *lease.Lease, via string) error {
	issued := record.Event{Kind: record.KindLeaseIssued, Details: map[string]string{"via": via, "actor": who.actor}}
	if who.web != nil {
		issued.Details["issuer"], issued.Details["subject"] = who.web.Issuer, who.web.Subject
	}
	auth.LeaseProvenance(&issued, l)
	if err := h.record(ctx, who.p, issued); err != nil {
		_, _ = h.leases.Revoke(context.WithoutCancel(ctx), l.ID)
		return err
	}
	return nil
}

// assumeRoleWithWebIdentity serves AssumeRoleWithWebIdentity: a request
// no key signs, whose WebIdentityToken the door verifies against the
// role's OIDC trust; then the role's lease is issued exactly as
// AssumeRole issues it, the web identity recorded as who assumed it.
func (h *Handler) assumeRoleWithWebIdentity(ctx context.Context, r *http.Request, form url.Values) (any, error) {
	if h.leases == nil {
		return nil, fail(400, "InvalidAction", "leases are not enabled on this gateway")
	}
	if r.URL.Query().Has("WebIdentityToken") {
		return nil, fail(400, "InvalidParameterValue", "WebIdentityToken belongs in the POST body, never in a URL")
	}
	if form.Has("ProviderId") {
		return nil, fail(400, "InvalidParameterValue", "ProviderId (OAuth 2.0 access tokens) is not supported; give an OpenID Connect ID token")
	}
	token := form.Get("WebIdentityToken")
	if token == "" {
		return nil, fail(400, "MissingParameter", "WebIdentityToken is required")
	}
	in, err := parseAssume(form)
	if err != nil {
		return nil, err
	}
	env, web, err := h.auth.AssumeWithWebIdentity(ctx, in.role, token)
	if err != nil {
		return nil, err
	}
	who := assumer{actor: "web-identity:" + web.String(), web: web}
	l, cred, err := h.issueInRole(ctx, who, env, in)
	if err != nil {
		return nil, err
	}
	if err := h.recordIssued(ctx, who, l, "sts:AssumeRoleWithWebIdentity"); err != nil {
		return nil, err
	}
	return &assumeRoleWithWebIdentityResponse{Xmlns: xmlns, Result: assumeRoleWithWebIdentityResult{
		Credentials: wireCredentials(cred), AssumedRoleUser: roleUser(l),
		SubjectFromWebIdentityToken: web.Subject, Provider: web.Issuer, Audience: env.OIDC.Audience,
	}}, nil
}

// getSessionToken serves GetSessionToken: owner credentials that die at
// expiry (the door refuses leases and sessions).
func (h *Handler) getSessionToken(ctx context.Context, p *auth.Principal, form url.Values) (any, error) {
	if form.Has("SerialNumber") || form.Has("TokenCode") {
		return nil, fail(400, "InvalidParameterValue", "MFA (SerialNumber, TokenCode) is not supported")
	}
	ttl := auth.DefaultSessionTTL
	if v := form.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < int(auth.MinSessionTTL/time.Second) || n > int(auth.MaxSessionTTL/time.Second) {
			return nil, fail(400, "ValidationError", "DurationSeconds must be %d-%d", int(auth.MinSessionTTL/time.Second), int(auth.MaxSessionTTL/time.Second))
		}
		ttl = time.Duration(n) * time.Second
	}
	ses, cred, err := h.auth.OwnerSession(ctx, p, ttl)
	if err != nil {
		return nil, err
	}
	e := record.Event{Kind: record.KindSessionIssued, Details: map[string]string{"via": "sts:GetSessionToken",
		"session": ses.ID, "access_key_id": ses.AccessKeyID, "expires_at": ses.ExpiresAt.Format(time.RFC3339)}}
	if err := h.record(ctx, p, e); err != nil {
		return nil, err
	}
	return &getSessionTokenResponse{Xmlns: xmlns, Result: getSessionTokenResult{Credentials: wireCredentials(cred)}}, nil
}

func wireCredentials(c auth.Credentials) credentials {
	return credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey,
		SessionToken: c.SessionToken, Expiration: c.Expiration.UTC().Format(time.RFC3339)}
}

func roleUser(l *lease.Lease) assumedRoleUser {
	return assumedRoleUser{AssumedRoleID: "AROA" + strings.ToUpper(strings.TrimPrefix(l.ID, "lse_")) + ":" + l.Run,
		Arn: fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", account, l.Role, l.Run)}
}

// runBranch returns the run's branch: the role's fixed branch, the branch
// the run already has, or a new fork ROLE/RUN.
func (h *Handler) runBranch(ctx context.Context, who assumer, env *lease.Role, run string, ttl time.Duration) (string, error) {
	if env.Branch != "" {
		return env.Branch, nil
	}
	existing, err := h.leases.RunBranch(ctx, env.Repo, env.Name, run)
	if err != nil || existing != "" {
		return existing, err
	}
	name := env.Name + "/" + branchSegment(run)
	created := record.Event{Kind: record.KindBranchCreated, Run: run, Repo: env.Repo, Branch: name,
		Details: map[string]string{"from": env.ForkFrom, "role": env.Name}}
	if who.web != nil {
		created.Principal = who.actor
	}
	if err := h.record(ctx, who.p, created); err != nil {
		return "", err
	}
	lim := branch.Limits{ExpiresAt: env.BranchLimits.ExpiresAt(time.Now(), ttl), QuotaBytes: env.QuotaBytes, QuotaObjects: env.QuotaObjects}
	if _, err := h.branches.CreateBranchWith(ctx, env.Repo, name, env.ForkFrom, lim); err != nil {
		if errors.Is(err, branch.ErrBranchExists) {
			// Someone else's branch: a run never adopts a branch it did
			// not create.
			return "", fail(400, "ValidationError", "branch %s already exists and is not this run's; choose another RoleSessionName", name)
		}
		return "", err
	}
	return name, nil
}

func (h *Handler) record(ctx context.Context, p *auth.Principal, e record.Event) error {
	if err := h.auth.Record(ctx, p, e); err != nil {
		return fail(503, "ServiceUnavailable", "the flight recorder could not record this operation, so it was not performed: %v", err)
	}
	return nil
}

func callerIdentity(l *lease.Lease, ak string) any {
	r := getCallerIdentityResult{Account: account, UserID: ak, Arn: fmt.Sprintf("arn:aws:iam::%s:user/owner", account)}
	if l != nil {
		r.UserID = "AROA" + strings.ToUpper(strings.TrimPrefix(l.ID, "lse_")) + ":" + l.Run
		r.Arn = fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", account, l.Role, l.Run)
	}
	return &getCallerIdentityResponse{Xmlns: xmlns, Result: r}
}

// isTimeout reports a timeout reading the request (a body that stalled
// or trickled).
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
