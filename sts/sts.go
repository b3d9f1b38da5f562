package sts

import (
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
	case errors.Is(err, auth.ErrOverBudget):
		return fail(403, "AccessDenied", "%v", err)
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
	p, err := h.auth.Authenticate(r, auth.STS)
	if err != nil {
		return nil, err
	}
	e.Principal = p.Name()
	defer h.auth.Finish(r.Context(), p)
	defer p.Signed.Body.Close()
	form := r.URL.Query()
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(p.Signed.Body, 64<<10+1))
		if err != nil {
			return nil, err
		}
		if len(body) > 64<<10 {
			return nil, fail(400, "ValidationError", "request body too large")
		}
		f, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fail(400, "MalformedQueryString", "%v", err)
		}
		for k, vs := range f {
			form[k] = vs
		}
	}
	switch a := form.Get("Action"); a {
	case "AssumeRole", "GetCallerIdentity":
		e.Operation = a // a bounded name; any other stays "unknown"
	}
	switch form.Get("Action") {
	case "AssumeRole":
		if h.leases == nil {
			return nil, fail(400, "InvalidAction", "leases are not enabled on this gateway")
		}
		return h.assumeRole(r.Context(), p, form)
	case "GetCallerIdentity":
		return callerIdentity(p.Lease, p.AccessKey), nil
	case "":
		return nil, fail(400, "MissingAction", "Action is required")
	}
	return nil, fail(400, "InvalidAction", "%q is not an STS action this gateway serves (AssumeRole, GetCallerIdentity)", form.Get("Action"))
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

func (h *Handler) assumeRole(ctx context.Context, p *auth.Principal, form url.Values) (any, error) {
	caller, actor := p.Lease, p.AccessKey
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
	var ttl time.Duration
	if v := form.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 900 || n > int(lease.MaxTTL/time.Second) {
			return nil, fail(400, "ValidationError", "DurationSeconds must be 900-%d", int(lease.MaxTTL/time.Second))
		}
		ttl = time.Duration(n) * time.Second
	}
	req := lease.Request{TTL: ttl, Purpose: form.Get("Purpose")}
	var l *lease.Lease
	var cred auth.Credentials
	if caller != nil {
		// A child of the caller: same repository, branch and run.
		if ttl > 0 && time.Now().Add(ttl).After(caller.ExpiresAt) {
			return nil, fail(400, "ValidationError", "DurationSeconds outlives the calling lease (it expires %s)", caller.ExpiresAt.Format(time.RFC3339))
		}
		req.View = caller.View
		if doc := form.Get("Policy"); doc != "" {
			rules, err := lease.ParsePolicy(doc, caller.Repo)
			if err != nil {
				return nil, err
			}
			if req.View = lease.Intersect(caller.View, rules); len(req.View) == 0 {
				return nil, fail(400, "ValidationError", "the session policy leaves nothing of the calling lease")
			}
		}
		req.Repo, req.Branch, req.Role, req.Principal, req.Parent = caller.Repo, caller.Branch, caller.Role, caller.Principal, caller
		if l, cred, err = h.leases.Issue(ctx, req); err != nil {
			return nil, err
		}
	} else {
		env, err := h.leases.GetRole(ctx, role)
		if err != nil {
			return nil, err
		}
		if doc := form.Get("Policy"); doc != "" {
			rules, err := lease.ParsePolicy(doc, env.Repo)
			if err != nil {
				return nil, err
			}
			if req.View = lease.Intersect(env.View, rules); len(req.View) == 0 {
				return nil, fail(400, "ValidationError", "the session policy leaves nothing of role %s", role)
			}
		}
		if err := env.WithinRole(&req); err != nil {
			return nil, err
		}
		req.Run = session
		if req.OnBehalfOf == "" {
			req.OnBehalfOf = actor
		}
		if req.Principal == "" {
			req.Principal = "role:" + role
		}
		if req.Branch, err = h.runBranch(ctx, p, env, session, req.TTL); err != nil {
			return nil, err
		}
		if _, err := manifest.ParseCommitID(env.ForkFrom); env.Branch == "" && err != nil {
			req.ForkedFrom = env.ForkFrom
		}
		if l, cred, err = h.leases.Issue(ctx, req); err != nil {
			return nil, err
		}
	}
	issued := record.Event{Kind: record.KindLeaseIssued, Details: map[string]string{"via": "sts:AssumeRole", "actor": actor}}
	auth.LeaseProvenance(&issued, l)
	if err := h.record(ctx, p, issued); err != nil {
		_, _ = h.leases.Revoke(context.WithoutCancel(ctx), l.ID)
		return nil, err
	}
	return &assumeRoleResponse{Xmlns: xmlns, Result: assumeRoleResult{
		Credentials: credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey,
			SessionToken: cred.SessionToken, Expiration: cred.Expiration.UTC().Format(time.RFC3339)},
		AssumedRoleUser: assumedRoleUser{AssumedRoleID: "AROA" + strings.ToUpper(strings.TrimPrefix(l.ID, "lse_")) + ":" + l.Run,
			Arn: fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", account, l.Role, l.Run)},
	}}, nil
}

// runBranch returns the run's branch: the role's fixed branch, the branch
// the run already has, or a new fork ROLE/RUN.
func (h *Handler) runBranch(ctx context.Context, p *auth.Principal, env *lease.Role, run string, ttl time.Duration) (string, error) {
	if env.Branch != "" {
		return env.Branch, nil
	}
	existing, err := h.leases.RunBranch(ctx, env.Repo, env.Name, run)
	if err != nil || existing != "" {
		return existing, err
	}
	name := env.Name + "/" + branchSegment(run)
	if err := h.record(ctx, p, record.Event{Kind: record.KindBranchCreated, Run: run, Repo: env.Repo, Branch: name,
		Details: map[string]string{"from": env.ForkFrom, "role": env.Name}}); err != nil {
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
