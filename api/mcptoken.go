package api

import (
	"context"

	"github.com/agentnas/nas/apiv1"
)

// MCP bearer tokens are minted with the owner's lease (mcp_token on
// lease/create), after the issue is recorded; the flight recorder notes
// that the lease has one, never the token.

// mcpNote is the recorded note of an owner's lease/create.
func mcpNote(a *apiv1.LeaseCreateRequest) string {
	if a.MCPToken {
		return "with an MCP bearer token"
	}
	return ""
}

// withMCPToken mints the MCP token of the issued lease out when a asks
// for one. A lease whose token cannot be minted is revoked at once, so
// the owner never holds a lease it asked a token for and did not get.
func (h *Handler) withMCPToken(ctx context.Context, a *apiv1.LeaseCreateRequest, out *apiv1.LeaseResponse) (*apiv1.LeaseResponse, error) {
	if !a.MCPToken {
		return out, nil
	}
	tok, err := h.leases.MintMCPToken(ctx, out.Lease.ID)
	if err != nil {
		_, _ = h.leases.Revoke(context.WithoutCancel(ctx), out.Lease.ID)
		return nil, err
	}
	out.Lease.MCPToken = tok
	return out, nil
}

// forReplay is what an idempotent call's answer res keeps for a replay
// when that differs from res (nil otherwise): an MCP token is shown once
// and kept only as a hash, so a replayed lease/create answers without
// it.
func forReplay(res any) any {
	lr, ok := res.(*apiv1.LeaseResponse)
	if !ok || lr.Lease.MCPToken == "" {
		return nil
	}
	cp := *lr
	cp.Lease.MCPToken = ""
	return &cp
}
