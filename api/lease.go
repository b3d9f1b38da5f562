package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// LeaseJSON is a lease as the control API shows it: the specification's
// lease.json plus, when just issued, the credentials.
type LeaseJSON struct {
	*lease.Lease
	Usage             *lease.Usage `json:"usage,omitempty"`
	SecretAccessKey   string       `json:"secret_access_key,omitempty"`
	SessionToken      string       `json:"session_token,omitempty"`
	CredentialsExpiry *time.Time   `json:"credentials_expire_at,omitempty"`
}

func denied(msg string) error {
	return &Error{Status: http.StatusForbidden, Code: "AccessDenied", Message: msg}
}

func notFound(msg string) error {
	return &Error{Status: http.StatusNotFound, Code: "NotFound", Message: msg}
}

// leaseEvent is an event about lease l, with its provenance.
func leaseEvent(kind record.Kind, l *lease.Lease, detailText string) record.Event {
	e := record.Event{Kind: kind, Details: detail(detailText)}
	auth.LeaseProvenance(&e, l)
	e.ReadManifest = record.ManifestID(l.Run)
	return e
}

// leaseArgs asks for a lease (see lease.Request).
type leaseArgs struct {
	Repo           string        `json:"repo"`
	Role           string        `json:"role"`
	Run            string        `json:"run"`
	Paths          []string      `json:"paths"`
	Actions        []string      `json:"actions"`
	View           []lease.Rule  `json:"view"`
	TTL            string        `json:"ttl"` // Go duration, default 4h
	Branch         string        `json:"branch"`
	ForkFrom       string        `json:"fork_from"`
	Purpose        string        `json:"purpose"`
	Principal      string        `json:"principal"`
	OnBehalfOf     string        `json:"on_behalf_of"`
	Budgets        lease.Budgets `json:"budgets"`
	SensitivityMax string        `json:"sensitivity_max"`
	Egress         bool          `json:"egress"`
	RequiresGate   []string      `json:"requires_gate"`
	// Limits of the branch fork_from creates.
	lease.BranchLimits
}

// runBranchLimits are the limits of a run's new branch.
func runBranchLimits(b lease.BranchLimits, leaseTTL time.Duration) branch.Limits {
	return branch.Limits{ExpiresAt: b.ExpiresAt(time.Now(), leaseTTL), QuotaBytes: b.QuotaBytes, QuotaObjects: b.QuotaObjects}
}

func (a *leaseArgs) view() ([]lease.Rule, error) {
	if len(a.View) > 0 {
		if len(a.Paths) > 0 || len(a.Actions) > 0 {
			return nil, fmt.Errorf("give view or paths and actions, not both: %w", lease.ErrInvalid)
		}
		return a.View, nil
	}
	if len(a.Paths) == 0 {
		return nil, nil
	}
	acts, err := lease.ParseActions(joinComma(a.Actions))
	if err != nil {
		return nil, err
	}
	var out []lease.Rule
	for _, p := range a.Paths {
		out = append(out, lease.Rule{Path: p, Actions: acts})
	}
	return out, nil
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// leaseCreate issues a lease: by the owner (optionally forking the run's
// branch ROLE/RUN from a ref), or by a lease holder, which gets a child
// that is never wider than itself.
func (h *Handler) leaseCreate(ctx context.Context, c *call) (any, error) {
	if h.leases == nil {
		return nil, notFound("leases are not enabled on this gateway")
	}
	var a leaseArgs
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	view, err := a.view()
	if err != nil {
		return nil, err
	}
	var ttl time.Duration
	if a.TTL != "" {
		if ttl, err = time.ParseDuration(a.TTL); err != nil {
			return nil, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "ttl: " + err.Error()}
		}
	}
	req := lease.Request{Repo: a.Repo, Branch: a.Branch, Run: a.Run, Role: a.Role, Principal: a.Principal,
		OnBehalfOf: a.OnBehalfOf, Purpose: a.Purpose, View: view, TTL: ttl, Budgets: a.Budgets,
		SensitivityMax: a.SensitivityMax, Egress: a.Egress, RequiresGate: a.RequiresGate}
	if p := c.p.Lease; p != nil {
		// A child: same repository and branch as the parent.
		if req.Repo == "" {
			req.Repo = p.Repo
		}
		if req.Branch == "" {
			req.Branch = p.Branch
		}
		if a.ForkFrom != "" {
			return nil, denied("a lease cannot fork branches")
		}
		// A child works for its parent's run, as its parent's role and
		// principal: it cannot take over another run or speak for someone
		// else.
		for name, v := range map[string]string{"role": a.Role, "run": a.Run, "principal": a.Principal, "on_behalf_of": a.OnBehalfOf} {
			if v != "" && v != map[string]string{"role": p.Role, "run": p.Run, "principal": p.Principal, "on_behalf_of": p.OnBehalfOf}[name] {
				return nil, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument",
					Message: "a child lease inherits its parent's " + name + "; it cannot name another"}
			}
		}
		req.Role, req.Run, req.Principal, req.OnBehalfOf = p.Role, p.Run, p.Principal, p.OnBehalfOf
		if len(req.View) == 0 {
			req.View = p.View
		}
		req.Parent = p
		l, cred, err := h.leases.Issue(ctx, req)
		if err != nil {
			return nil, err
		}
		if err := h.recordIssue(ctx, c, l, "child of "+p.ID); err != nil {
			return nil, err
		}
		return issued(l, cred), nil
	}
	if err := required("repo", a.Repo, "role", a.Role); err != nil {
		return nil, err
	}
	// The owner is held to the role's envelope exactly as STS AssumeRole
	// is: its paths and actions, longest lifetime and budgets.
	env, err := h.leases.GetRole(ctx, a.Role)
	if errors.Is(err, lease.ErrNotFound) {
		return nil, notFound("no role " + a.Role + ": define it first (nas role put)")
	}
	if err != nil {
		return nil, err
	}
	if env.Repo != a.Repo {
		return nil, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "role " + a.Role + " is for repository " + env.Repo}
	}
	if err := env.WithinRole(&req); err != nil {
		return nil, err
	}
	ttl = req.TTL
	if req.Principal == "" {
		req.Principal = "role:" + a.Role
	}
	if req.OnBehalfOf == "" {
		req.OnBehalfOf = c.p.AccessKey
	}
	if a.Branch != "" && a.ForkFrom != "" {
		return nil, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "give branch or fork_from, not both"}
	}
	if req.Run == "" {
		req.Run = lease.NewRunID()
	}
	created := ""
	if err := a.BranchLimits.Validate(); err != nil {
		return nil, err
	}
	if a.ForkFrom != "" {
		if _, err := manifest.ParseCommitID(a.ForkFrom); err != nil {
			req.ForkedFrom = a.ForkFrom // a branch: the run's proposals go back to it
		}
		name := a.Role + "/" + req.Run
		if existing, err := h.leases.RunBranch(ctx, a.Repo, a.Role, req.Run); err != nil {
			return nil, err
		} else if existing != "" {
			name = existing // the run continues on its branch
		} else if err := h.record(ctx, c, record.Event{Kind: record.KindBranchCreated, Repo: a.Repo, Branch: name, Details: detail("from " + a.ForkFrom)}); err != nil {
			return nil, err
		} else if _, err := h.b.CreateBranchWith(ctx, a.Repo, name, a.ForkFrom, runBranchLimits(a.BranchLimits, ttl)); err != nil {
			return nil, err
		} else {
			created = name
		}
		req.Branch = name
	}
	if req.Branch == "" {
		return nil, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "branch or fork_from is required"}
	}
	if _, err := h.b.GetBranch(ctx, req.Repo, req.Branch); err != nil {
		return nil, err
	}
	l, cred, err := h.leases.Issue(ctx, req)
	if err != nil {
		if created != "" {
			_ = h.b.DeleteBranch(context.WithoutCancel(ctx), a.Repo, created)
		}
		return nil, err
	}
	if err := h.recordIssue(ctx, c, l, ""); err != nil {
		return nil, err
	}
	return issued(l, cred), nil
}

// recordIssue records an issued lease; a lease that cannot be recorded is
// revoked at once, so no unrecorded lease is ever usable.
func (h *Handler) recordIssue(ctx context.Context, c *call, l *lease.Lease, note string) error {
	if err := h.record(ctx, c, leaseEvent(record.KindLeaseIssued, l, note)); err != nil {
		_, _ = h.leases.Revoke(context.WithoutCancel(ctx), l.ID)
		return err
	}
	return nil
}

func issued(l *lease.Lease, cred auth.Credentials) map[string]any {
	exp := cred.Expiration
	return map[string]any{"lease": LeaseJSON{Lease: l, SecretAccessKey: cred.SecretAccessKey, SessionToken: cred.SessionToken, CredentialsExpiry: &exp}}
}

// visibleLease lets the owner see any lease and a lease holder itself and
// its descendants.
func (h *Handler) visibleLease(ctx context.Context, c *call, id string) (*lease.Lease, error) {
	l, err := h.leases.Get(ctx, id)
	if errors.Is(err, lease.ErrNotFound) {
		return nil, notFound("no lease " + id)
	}
	if err != nil {
		return nil, err
	}
	if c.p.Lease == nil {
		return l, nil
	}
	for cur := l; ; {
		if cur.ID == c.p.Lease.ID {
			return l, nil
		}
		if cur.Parent == nil {
			return nil, notFound("no lease " + id)
		}
		if cur, err = h.leases.Get(ctx, *cur.Parent); err != nil {
			return nil, notFound("no lease " + id)
		}
	}
}

func (h *Handler) leaseGet(ctx context.Context, c *call) (any, error) {
	if h.leases == nil {
		return nil, notFound("leases are not enabled")
	}
	var a struct {
		LeaseID string `json:"lease_id"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if a.LeaseID == "" && c.p.Lease != nil {
		a.LeaseID = c.p.Lease.ID
	}
	l, err := h.visibleLease(ctx, c, a.LeaseID)
	if err != nil {
		return nil, err
	}
	r := h.leases.Remaining(ctx, l)
	return map[string]any{"lease": LeaseJSON{Lease: l}, "remaining": remainingJSON(r)}, nil
}

// RemainingJSON is what a lease may still consume (-1: no limit), with the
// names of the budgets it is checked against (lease.Budgets).
type RemainingJSON struct {
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	Requests     int64 `json:"requests"`
}

func remainingJSON(r lease.Remaining) RemainingJSON {
	return RemainingJSON{BytesRead: r.BytesRead, BytesWritten: r.BytesWritten, Requests: r.Requests}
}

func (h *Handler) leaseList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		Run    string `json:"run"`
		Role   string `json:"role"`
		Active bool   `json:"active"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	ls, err := h.leases.List(ctx, auth.ListFilter{Repo: a.Repo, Run: a.Run, Role: a.Role, Active: a.Active})
	if err != nil {
		return nil, err
	}
	out := []LeaseJSON{}
	for _, l := range ls {
		out = append(out, LeaseJSON{Lease: l})
	}
	return map[string]any{"leases": out}, nil
}

func (h *Handler) leaseRevoke(ctx context.Context, c *call) (any, error) {
	var a struct {
		LeaseID string `json:"lease_id"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	l, err := h.visibleLease(ctx, c, a.LeaseID)
	if err != nil {
		return nil, err
	}
	// Record first, then act.
	if err := h.record(ctx, c, leaseEvent(record.KindLeaseRevoked, l, "cascades to descendants")); err != nil {
		return nil, err
	}
	ids, err := h.leases.Revoke(ctx, l.ID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"revoked": ids}, nil
}

func (h *Handler) shareGrant(ctx context.Context, c *call) (any, error) {
	var a struct {
		LeaseID   string   `json:"lease_id"`
		Path      string   `json:"path"`
		Actions   []string `json:"actions"`
		TTL       string   `json:"ttl"`
		SingleUse bool     `json:"single_use"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	acts, err := lease.ParseActions(joinComma(a.Actions))
	if err != nil {
		return nil, err
	}
	ttl := time.Hour
	if a.TTL != "" {
		if ttl, err = time.ParseDuration(a.TTL); err != nil || ttl <= 0 {
			return nil, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "ttl must be a positive duration"}
		}
	}
	l, err := h.leases.Get(ctx, a.LeaseID)
	if err != nil {
		return nil, err
	}
	if err := h.record(ctx, c, leaseEvent(record.KindShareGranted, l, a.Path)); err != nil {
		return nil, err
	}
	g, err := h.leases.AddGrant(ctx, a.LeaseID, lease.Grant{Path: a.Path, Actions: acts, ExpiresAt: time.Now().Add(ttl), SingleUse: a.SingleUse})
	if err != nil {
		return nil, err
	}
	return map[string]any{"grant": g}, nil
}

// shareList lists the grants of a lease, live or not.
func (h *Handler) shareList(ctx context.Context, c *call) (any, error) {
	var a struct {
		LeaseID string `json:"lease_id"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	l, err := h.leases.Get(ctx, a.LeaseID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := []GrantJSON{}
	for _, g := range l.Grants {
		out = append(out, GrantJSON{Grant: g, Live: g.Live(now)})
	}
	return map[string]any{"grants": out}, nil
}

// GrantJSON is a grant with whether it may still be used.
type GrantJSON struct {
	lease.Grant
	Live bool `json:"live"`
}

// shareRevoke ends a grant at once.
func (h *Handler) shareRevoke(ctx context.Context, c *call) (any, error) {
	var a struct {
		LeaseID string `json:"lease_id"`
		GrantID string `json:"grant_id"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("lease_id", a.LeaseID, "grant_id", a.GrantID); err != nil {
		return nil, err
	}
	l, err := h.leases.Get(ctx, a.LeaseID)
	if err != nil {
		return nil, err
	}
	e := leaseEvent(record.KindShareRevoked, l, "")
	e.Details = map[string]string{"grant": a.GrantID}
	if err := h.record(ctx, c, e); err != nil {
		return nil, err
	}
	g, err := h.leases.RevokeGrant(ctx, a.LeaseID, a.GrantID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"grant": g}, nil
}

func (h *Handler) rolePut(ctx context.Context, c *call) (any, error) {
	var r lease.Role
	if err := c.decode(&r); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, r.Repo); err != nil {
		return nil, err
	}
	out, err := h.leases.PutRole(ctx, r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"role": out}, nil
}

func (h *Handler) roleGet(ctx context.Context, c *call) (any, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	r, err := h.leases.GetRole(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"role": r}, nil
}

func (h *Handler) roleList(ctx context.Context, c *call) (any, error) {
	if err := c.decode(&struct{}{}); err != nil {
		return nil, err
	}
	rs, err := h.leases.ListRoles(ctx)
	if err != nil {
		return nil, err
	}
	if rs == nil {
		rs = []lease.Role{}
	}
	return map[string]any{"roles": rs}, nil
}

func (h *Handler) roleDelete(ctx context.Context, c *call) (any, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := h.leases.DeleteRole(ctx, a.Name); err != nil {
		return nil, err
	}
	return map[string]any{"deleted": a.Name}, nil
}
