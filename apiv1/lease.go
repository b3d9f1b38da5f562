package apiv1

import (
	"time"

	"github.com/agentnas/nas/lease"
)

// Lease is a lease as the control API shows it: the specification's
// lease.json, and once, in the answer that issues it, its credentials.
type Lease struct {
	lease.Lease
	SecretAccessKey   string     `json:"secret_access_key,omitempty"`
	SessionToken      string     `json:"session_token,omitempty"`
	CredentialsExpiry *time.Time `json:"credentials_expire_at,omitempty"`
	// MCPToken is the lease's MCP bearer token (nasmcp_…, for
	// streamable HTTP at /_nas/mcp), in the answer that issues it and
	// nowhere else: the gateway keeps only its hash, so neither lease/get
	// nor lease/list nor a replay of the same idempotent call shows it.
	MCPToken string `json:"mcp_token,omitempty"`
}

// Remaining is what a lease may still consume; -1 means no limit.
type Remaining struct {
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	Requests     int64 `json:"requests"`
}

// LeaseCreateRequest asks for a lease. The owner names a role (whose
// envelope holds the lease, as for AssumeRole) and the run's branch or a
// ref to fork it from; a lease holder gets a child, never wider than
// itself. Paths with Actions, or View, give the lease's view (default:
// the role's, or the parent's).
type LeaseCreateRequest struct {
	Repo           string        `json:"repo,omitempty"`
	Role           string        `json:"role,omitempty"`
	Run            string        `json:"run,omitempty"`
	Paths          []string      `json:"paths,omitempty"`
	Actions        []string      `json:"actions,omitempty"`
	View           []lease.Rule  `json:"view,omitempty"`
	TTL            string        `json:"ttl,omitempty"`
	Branch         string        `json:"branch,omitempty"`
	ForkFrom       string        `json:"fork_from,omitempty"`
	Purpose        string        `json:"purpose,omitempty"`
	Principal      string        `json:"principal,omitempty"`
	OnBehalfOf     string        `json:"on_behalf_of,omitempty"`
	Budgets        lease.Budgets `json:"budgets,omitzero"`
	SensitivityMax string        `json:"sensitivity_max,omitempty"`
	Egress         bool          `json:"egress,omitempty"`
	RequiresGate   []string      `json:"requires_gate,omitempty"`
	// MCPToken asks for an MCP bearer token bound to the new lease
	// (Lease.MCPToken). Only the owner may ask; a lease asking for a
	// child with one is refused (AccessDenied), since a token is a
	// credential a remote host holds beyond the run's own reach.
	MCPToken bool `json:"mcp_token,omitempty"`
	// Limits of the branch fork_from creates.
	lease.BranchLimits
}

// LeaseResponse answers lease/create (with credentials).
type LeaseResponse struct {
	Lease Lease `json:"lease"`
}

// LeaseWidenRequest is a lease's request for wider authority: Paths with
// Actions (or View) it does not hold, for TTL (default: the rest of the
// lease), and why. It waits at a gate; a person's approval adds them to
// the lease as grants. The owner needs none.
type LeaseWidenRequest struct {
	Paths   []string     `json:"paths,omitempty"`
	Actions []string     `json:"actions,omitempty"`
	View    []lease.Rule `json:"view,omitempty"`
	TTL     string       `json:"ttl,omitempty"`
	Reason  string       `json:"reason"`
}

// LeaseGetRequest names a lease; a lease holder may name itself ("" is
// itself) or a descendant.
type LeaseGetRequest struct {
	LeaseID string `json:"lease_id,omitempty"`
}

// LeaseGetResponse answers lease/get.
type LeaseGetResponse struct {
	Lease     Lease     `json:"lease"`
	Remaining Remaining `json:"remaining"`
	// SessionTaint is the run's taint: the origins and the highest
	// sensitivity of what it has read ([] for a clean session).
	SessionTaint []string `json:"session_taint"`
}

// LeaseListRequest filters leases.
type LeaseListRequest struct {
	Repo   string `json:"repo,omitempty"`
	Run    string `json:"run,omitempty"`
	Role   string `json:"role,omitempty"`
	Active bool   `json:"active,omitempty"`
}

// LeaseListResponse answers lease/list, newest first.
type LeaseListResponse struct {
	Leases []Lease `json:"leases"`
}

// LeaseRevokeRequest revokes a lease and every lease it minted.
type LeaseRevokeRequest struct {
	LeaseID string `json:"lease_id"`
}

// LeaseRevokeResponse lists what was revoked.
type LeaseRevokeResponse struct {
	Revoked []string `json:"revoked"`
}

// ShareGrantRequest shows a lease one more path for a while (or one use).
type ShareGrantRequest struct {
	LeaseID   string   `json:"lease_id"`
	Path      string   `json:"path"`
	Actions   []string `json:"actions"`
	TTL       string   `json:"ttl,omitempty"`
	SingleUse bool     `json:"single_use,omitempty"`
}

// ShareListRequest lists a lease's grants.
type ShareListRequest struct {
	LeaseID string `json:"lease_id"`
}

// ShareRevokeRequest ends a grant.
type ShareRevokeRequest struct {
	LeaseID string `json:"lease_id"`
	GrantID string `json:"grant_id"`
}

// Grant is a share grant and whether it may still be used.
type Grant struct {
	lease.Grant
	Live bool `json:"live"`
}

// GrantResponse answers share/grant and share/revoke.
type GrantResponse struct {
	Grant lease.Grant `json:"grant"`
}

// ShareListResponse answers share/list.
type ShareListResponse struct {
	Grants []Grant `json:"grants"`
}

// RolePutRequest creates or replaces a role.
type RolePutRequest struct {
	lease.Role
}

// RoleRequest names a role (get, delete).
type RoleRequest struct {
	Name string `json:"name"`
}

// RoleGetRequest is role/get.
type RoleGetRequest RoleRequest

// RoleDeleteRequest is role/delete.
type RoleDeleteRequest RoleRequest

// RoleListRequest is role/list.
type RoleListRequest struct{}

// RoleResponse answers role/put and role/get.
type RoleResponse struct {
	Role lease.Role `json:"role"`
}

// RoleListResponse answers role/list.
type RoleListResponse struct {
	Roles []lease.Role `json:"roles"`
}

// Op implements Request.
func (LeaseCreateRequest) Op() string { return "lease/create" }

// Op implements Request.
func (LeaseGetRequest) Op() string { return "lease/get" }

// Op implements Request.
func (LeaseWidenRequest) Op() string { return "lease/widen" }

// Op implements Request.
func (LeaseListRequest) Op() string { return "lease/list" }

// Op implements Request.
func (LeaseRevokeRequest) Op() string { return "lease/revoke" }

// Op implements Request.
func (ShareGrantRequest) Op() string { return "share/grant" }

// Op implements Request.
func (ShareListRequest) Op() string { return "share/list" }

// Op implements Request.
func (ShareRevokeRequest) Op() string { return "share/revoke" }

// Op implements Request.
func (RolePutRequest) Op() string { return "role/put" }

// Op implements Request.
func (RoleGetRequest) Op() string { return "role/get" }

// Op implements Request.
func (RoleDeleteRequest) Op() string { return "role/delete" }

// Op implements Request.
func (RoleListRequest) Op() string { return "role/list" }
