package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// Leases, share grants and roles.

func denied(msg string) error {
	return &Error{Status: http.StatusForbidden, Code: apiv1.CodeAccessDenied, Message: msg}
}

func notFound(msg string) error {
	return &Error{Status: http.StatusNotFound, Code: apiv1.CodeNotFound, Message: msg}
}

func invalid(msg string) error {
	return &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: msg}
}

// leaseEvent is an event about lease l, with its provenance.
func leaseEvent(kind record.Kind, l *lease.Lease, detailText string) record.Event {
	e := record.Event{Kind: kind, Details: detail(detailText)}
	auth.LeaseProvenance(&e, l)
	e.ReadManifest = record.ManifestID(l.Run)
	return e
}

// runBranchLimits are the limits of a run's new branch.
func runBranchLimits(b lease.BranchLimits, leaseTTL time.Duration) branch.Limits {
	return branch.Limits{ExpiresAt: b.ExpiresAt(time.Now(), leaseTTL), QuotaBytes: b.QuotaBytes, QuotaObjects: b.QuotaObjects}
}

// leaseRequest turns lease/create's arguments into the model's request.
func leaseRequest(a *apiv1.LeaseCreateRequest) (lease.Request, error) {
	req := lease.Request{Repo: a.Repo, Branch: a.Branch, Run: a.Run, Role: a.Role, Principal: a.Principal,
		OnBehalfOf: a.OnBehalfOf, Purpose: a.Purpose, Budgets: a.Budgets,
		SensitivityMax: a.SensitivityMax, Egress: a.Egress, RequiresGate: a.RequiresGate}
	switch {
	case len(a.View) > 0 && (len(a.Paths) > 0 || len(a.Actions) > 0):
		return req, fmt.Errorf("give view or paths and actions, not both: %w", lease.ErrInvalid)
	case len(a.View) > 0:
		req.View = a.View
	case len(a.Paths) > 0:
		acts, err := lease.ParseActions(strings.Join(a.Actions, ","))
		if err != nil {
			return req, err
		}
		for _, p := range a.Paths {
			req.View = append(req.View, lease.Rule{Path: p, Actions: acts})
		}
	}
	if a.TTL != "" {
		ttl, err := time.ParseDuration(a.TTL)
		if err != nil {
			return req, invalid("ttl: " + err.Error())
		}
		req.TTL = ttl
	}
	return req, nil
}

// leaseCreate issues a lease: by the owner (optionally forking the run's
// branch ROLE/RUN from a ref), or by a lease holder, which gets a child
// that is never wider than itself.
func (h *Handler) leaseCreate(ctx context.Context, c *call, a *apiv1.LeaseCreateRequest) (*apiv1.LeaseResponse, error) {
	if h.leases == nil {
		return nil, notFound("leases are not enabled on this gateway")
	}
	req, err := leaseRequest(a)
	if err != nil {
		return nil, err
	}
	if p := c.p.Lease; p != nil {
		return h.childLease(ctx, c, a, req, p)
	}
	return h.ownerLease(ctx, c, a, req)
}

// childLease issues a child of the calling lease: same repository, branch,
// run, role and principal; never wider.
func (h *Handler) childLease(ctx context.Context, c *call, a *apiv1.LeaseCreateRequest, req lease.Request, p *lease.Lease) (*apiv1.LeaseResponse, error) {
	if a.MCPToken {
		return nil, denied("only the owner mints MCP tokens; a lease cannot ask for one")
	}
	for _, f := range []struct{ name, asked, parent string }{
		{"role", a.Role, p.Role}, {"run", a.Run, p.Run}, {"principal", a.Principal, p.Principal}, {"on_behalf_of", a.OnBehalfOf, p.OnBehalfOf},
	} {
		if f.asked != "" && f.asked != f.parent {
			return nil, invalid("a child lease inherits its parent's " + f.name + "; it cannot name another")
		}
	}
	if req.Repo == "" {
		req.Repo = p.Repo
	}
	if req.Branch == "" {
		req.Branch = p.Branch
	}
	req.Role, req.Run, req.Principal, req.OnBehalfOf = p.Role, p.Run, p.Principal, p.OnBehalfOf
	if len(req.View) == 0 {
		req.View = p.View
	}
	req.Parent = p
	if err := h.auth.GuardLease(ctx, c.p, req); err != nil {
		return nil, err
	}
	created, err := h.childFork(ctx, c, a, &req, p)
	if err != nil {
		return nil, err
	}
	l, cred, err := h.leases.Issue(ctx, req)
	if err != nil {
		if created {
			_ = h.b.DiscardBranch(context.WithoutCancel(ctx), req.Repo, req.Branch)
		}
		return nil, err
	}
	if err := h.recordIssue(ctx, c, l, "child of "+p.ID); err != nil {
		return nil, err
	}
	return issued(l, cred), nil
}

// childFork makes the branch of a child that asks for one: fork_from
// must be the parent's own branch and branch PARENT/NAME, a new branch
// made from the parent's last commit (staged changes are not in it) by
// the parent's right to write its branch. It reports whether it made one.
func (h *Handler) childFork(ctx context.Context, c *call, a *apiv1.LeaseCreateRequest, req *lease.Request, p *lease.Lease) (bool, error) {
	if a.ForkFrom == "" {
		return false, nil
	}
	if a.ForkFrom != p.Branch || req.Repo != p.Repo {
		return false, denied("a lease forks only its own branch " + p.Branch)
	}
	name, ok := strings.CutPrefix(a.Branch, p.Branch+"/")
	if !ok || name == "" || strings.Contains(name, "/") {
		return false, invalid("a fork of " + p.Branch + " is named " + p.Branch + "/NAME")
	}
	if a.BranchLimits != (lease.BranchLimits{}) {
		return false, denied("branch limits are the owner's to set")
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, auth.Target{Repo: p.Repo, Branch: p.Branch}); err != nil {
		return false, err
	}
	limits, err := h.forkRoom(ctx, p)
	if err != nil {
		return false, err
	}
	e := record.Event{Kind: record.KindBranchCreated, Repo: p.Repo, Branch: a.Branch, Details: detail("from " + p.Branch)}
	if err := h.record(ctx, c, e); err != nil {
		return false, err
	}
	if _, err := h.b.CreateBranchWith(ctx, p.Repo, a.Branch, p.Branch, limits); err != nil {
		return false, err
	}
	req.Branch, req.ForkedFrom = a.Branch, p.Branch
	return true, nil
}

// maxForks bounds the forks leases of one run may make (forks of forks
// included: they are all named under the run's branch).
const maxForks = 16

// forkRoom refuses a fork of p's branch once p's run has maxForks, and returns
// the limits a fork inherits: its parent branch's expiry and quotas.
func (h *Handler) forkRoom(ctx context.Context, p *lease.Lease) (branch.Limits, error) {
	parent, err := h.b.GetBranch(ctx, p.Repo, p.Branch)
	if err != nil {
		return branch.Limits{}, err
	}
	root, err := h.leases.RunBranch(ctx, p.Repo, p.Role, p.Run)
	if err != nil {
		return branch.Limits{}, err
	}
	root = cmp.Or(root, p.Branch)
	all, err := h.b.ListBranches(ctx, p.Repo)
	if err != nil {
		return branch.Limits{}, err
	}
	n := 0
	for _, b := range all {
		if strings.HasPrefix(b.Name, root+"/") {
			n++
		}
	}
	if n >= maxForks {
		return branch.Limits{}, &Error{Status: http.StatusForbidden, Code: apiv1.CodeQuotaExceeded,
			Message: fmt.Sprintf("run %s has %d forks of its branch %s, the most leases may make", p.Run, n, root)}
	}
	return parent.Limits, nil
}

// ownerLease issues the owner's lease, held to its role's envelope exactly
// as STS AssumeRole is (paths and actions, longest lifetime, budgets),
// on a branch it names or a fork ROLE/RUN it makes.
func (h *Handler) ownerLease(ctx context.Context, c *call, a *apiv1.LeaseCreateRequest, req lease.Request) (*apiv1.LeaseResponse, error) {
	if err := required("repo", a.Repo, "role", a.Role); err != nil {
		return nil, err
	}
	if a.Branch != "" && a.ForkFrom != "" {
		return nil, invalid("give branch or fork_from, not both")
	}
	if err := a.BranchLimits.Validate(); err != nil {
		return nil, err
	}
	env, err := h.leases.GetRole(ctx, a.Role)
	if errors.Is(err, lease.ErrNotFound) {
		return nil, notFound("no role " + a.Role + ": define it first (nas role put)")
	}
	if err != nil {
		return nil, err
	}
	if env.Repo != a.Repo {
		return nil, invalid("role " + a.Role + " is for repository " + env.Repo)
	}
	if err := env.WithinRole(&req); err != nil {
		return nil, err
	}
	if req.Principal == "" {
		req.Principal = "role:" + a.Role
	}
	if req.OnBehalfOf == "" {
		req.OnBehalfOf = c.p.AccessKey
	}
	if req.Run == "" {
		req.Run = lease.NewRunID()
	}
	if err := h.auth.GuardLease(ctx, c.p, req); err != nil {
		return nil, err
	}
	created, err := h.runBranch(ctx, c, a, &req)
	if err != nil {
		return nil, err
	}
	if _, err := h.b.GetBranch(ctx, req.Repo, req.Branch); err != nil {
		return nil, err
	}
	l, cred, err := h.leases.Issue(ctx, req)
	if err != nil {
		if created {
			_ = h.b.DiscardBranch(context.WithoutCancel(ctx), a.Repo, req.Branch)
		}
		return nil, err
	}
	if err := h.recordIssue(ctx, c, l, mcpNote(a)); err != nil {
		return nil, err
	}
	return h.withMCPToken(ctx, a, issued(l, cred))
}

// runBranch sets the branch of an owner's lease: the one it names, or
// the run's fork ROLE/RUN of fork_from (made now unless the run has one).
// It reports whether it made the branch.
func (h *Handler) runBranch(ctx context.Context, c *call, a *apiv1.LeaseCreateRequest, req *lease.Request) (bool, error) {
	if a.ForkFrom == "" {
		if req.Branch == "" {
			return false, invalid("branch or fork_from is required")
		}
		return false, nil
	}
	if _, err := manifest.ParseCommitID(a.ForkFrom); err != nil {
		req.ForkedFrom = a.ForkFrom // a branch: the run's proposals go back to it
	}
	existing, err := h.leases.RunBranch(ctx, a.Repo, a.Role, req.Run)
	if err != nil {
		return false, err
	}
	if existing != "" {
		req.Branch = existing // the run continues on its branch
		return false, nil
	}
	req.Branch = a.Role + "/" + req.Run
	e := record.Event{Kind: record.KindBranchCreated, Repo: a.Repo, Branch: req.Branch, Details: detail("from " + a.ForkFrom)}
	if err := h.record(ctx, c, e); err != nil {
		return false, err
	}
	if _, err := h.b.CreateBranchWith(ctx, a.Repo, req.Branch, a.ForkFrom, runBranchLimits(a.BranchLimits, req.TTL)); err != nil {
		return false, err
	}
	return true, nil
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

func issued(l *lease.Lease, cred auth.Credentials) *apiv1.LeaseResponse {
	exp := cred.Expiration
	return &apiv1.LeaseResponse{Lease: apiv1.Lease{Lease: *l, SecretAccessKey: cred.SecretAccessKey, SessionToken: cred.SessionToken, CredentialsExpiry: &exp}}
}

// visibleLease lets the owner see any lease and a lease holder itself and
// its descendants; any other lease does not exist for it.
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

func (h *Handler) leaseGet(ctx context.Context, c *call, a *apiv1.LeaseGetRequest) (*apiv1.LeaseGetResponse, error) {
	if h.leases == nil {
		return nil, notFound("leases are not enabled")
	}
	if a.LeaseID == "" && c.p.Lease != nil {
		a.LeaseID = c.p.Lease.ID
	}
	l, err := h.visibleLease(ctx, c, a.LeaseID)
	if err != nil {
		return nil, err
	}
	t, err := h.leases.RunTaint(ctx, l.Run)
	if err != nil {
		return nil, err
	}
	return &apiv1.LeaseGetResponse{Lease: apiv1.Lease{Lease: *l}, Remaining: remainingOut(h.leases.Remaining(ctx, l)), SessionTaint: t.List()}, nil
}

func remainingOut(r lease.Remaining) apiv1.Remaining {
	return apiv1.Remaining{BytesRead: r.BytesRead, BytesWritten: r.BytesWritten, Requests: r.Requests}
}

func (h *Handler) leaseList(ctx context.Context, c *call, a *apiv1.LeaseListRequest) (*apiv1.LeaseListResponse, error) {
	ls, err := h.leases.List(ctx, auth.ListFilter{Repo: a.Repo, Run: a.Run, Role: a.Role, Active: a.Active})
	if err != nil {
		return nil, err
	}
	out := &apiv1.LeaseListResponse{Leases: []apiv1.Lease{}}
	for _, l := range ls {
		out.Leases = append(out.Leases, apiv1.Lease{Lease: *l})
	}
	return out, nil
}

func (h *Handler) leaseRevoke(ctx context.Context, c *call, a *apiv1.LeaseRevokeRequest) (*apiv1.LeaseRevokeResponse, error) {
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
	if ids == nil {
		ids = []string{}
	}
	return &apiv1.LeaseRevokeResponse{Revoked: ids}, nil
}

func (h *Handler) shareGrant(ctx context.Context, c *call, a *apiv1.ShareGrantRequest) (*apiv1.GrantResponse, error) {
	acts, err := lease.ParseActions(strings.Join(a.Actions, ","))
	if err != nil {
		return nil, err
	}
	ttl := time.Hour
	if a.TTL != "" {
		// A grant never outlives its lease (AddGrant caps it).
		if ttl, err = time.ParseDuration(a.TTL); err != nil || ttl <= 0 {
			return nil, invalid("ttl must be a positive duration")
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
	return &apiv1.GrantResponse{Grant: *g}, nil
}

// shareList lists the grants of a lease, live or not.
func (h *Handler) shareList(ctx context.Context, c *call, a *apiv1.ShareListRequest) (*apiv1.ShareListResponse, error) {
	l, err := h.leases.Get(ctx, a.LeaseID)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := &apiv1.ShareListResponse{Grants: []apiv1.Grant{}}
	for _, g := range l.Grants {
		out.Grants = append(out.Grants, apiv1.Grant{Grant: g, Live: g.Live(now)})
	}
	return out, nil
}

// shareRevoke ends a grant at once.
func (h *Handler) shareRevoke(ctx context.Context, c *call, a *apiv1.ShareRevokeRequest) (*apiv1.GrantResponse, error) {
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
	return &apiv1.GrantResponse{Grant: *g}, nil
}

func (h *Handler) rolePut(ctx context.Context, c *call, a *apiv1.RolePutRequest) (*apiv1.RoleResponse, error) {
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	out, err := h.leases.PutRole(ctx, a.Role)
	if err != nil {
		return nil, err
	}
	return &apiv1.RoleResponse{Role: *out}, nil
}

func (h *Handler) roleGet(ctx context.Context, c *call, a *apiv1.RoleGetRequest) (*apiv1.RoleResponse, error) {
	r, err := h.leases.GetRole(ctx, a.Name)
	if err != nil {
		return nil, err
	}
	return &apiv1.RoleResponse{Role: *r}, nil
}

func (h *Handler) roleList(ctx context.Context, c *call, a *apiv1.RoleListRequest) (*apiv1.RoleListResponse, error) {
	rs, err := h.leases.ListRoles(ctx)
	if err != nil {
		return nil, err
	}
	if rs == nil {
		rs = []lease.Role{}
	}
	return &apiv1.RoleListResponse{Roles: rs}, nil
}

func (h *Handler) roleDelete(ctx context.Context, c *call, a *apiv1.RoleDeleteRequest) (*apiv1.DeletedResponse, error) {
	if err := h.leases.DeleteRole(ctx, a.Name); err != nil {
		return nil, err
	}
	return &apiv1.DeletedResponse{Deleted: a.Name}, nil
}
