package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/lease"
)

// newRoleCmd builds `nas role`: the roles STS AssumeRole issues leases
// within.
func newRoleCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "role", Short: "Define the roles STS AssumeRole issues leases within"}
	cmd.AddCommand(newRolePutCmd(), newRoleShowCmd(), newRoleListCmd(), newRoleDeleteCmd())
	return cmd
}

// rolePutOptions are the argument and flags of `nas role put`.
type rolePutOptions struct {
	name                                                                string
	repo, branch, forkFrom, actions, sensitivity, principal, onBehalfOf string
	paths                                                               []string
	maxTTL                                                              time.Duration
	egress                                                              bool
	budgets                                                             budgetFlags
	branchLimits                                                        runBranchFlags
	oidc                                                                oidcFlags
}

// oidcFlags are the web identities a role trusts (AssumeRoleWithWebIdentity).
type oidcFlags struct {
	issuer, jwksFile, audience, subject string
	claims                              []string
}

func (f *oidcFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.issuer, "oidc-issuer", "", "trust tokens of this OpenID Connect issuer (its iss; keys from ISSUER/.well-known/openid-configuration unless --oidc-jwks)")
	fl.StringVar(&f.jwksFile, "oidc-jwks", "", "verify tokens with this JWKS file (public keys) instead of the issuer's discovery; the gateway stores it")
	fl.StringVar(&f.audience, "oidc-audience", "", "the audience (aud) trusted tokens are for")
	fl.StringVar(&f.subject, "oidc-subject", "", "only subjects (sub) matching this pattern (* any characters, ? one)")
	fl.StringArrayVar(&f.claims, "oidc-claim", nil, "require claim=pattern (repeatable)")
}

// trust returns the trust the flags describe, nil when none is given.
func (f *oidcFlags) trust() (*lease.OIDCTrust, error) {
	if f.issuer == "" && f.jwksFile == "" && f.audience == "" && f.subject == "" && len(f.claims) == 0 {
		return nil, nil
	}
	if f.issuer == "" || f.audience == "" {
		return nil, usagef("--oidc-issuer and --oidc-audience are required to trust web identities")
	}
	t := &lease.OIDCTrust{Issuer: f.issuer, Audience: f.audience, Subject: f.subject}
	for _, c := range f.claims {
		cond, err := lease.ParseClaimCondition(c)
		if err != nil {
			return nil, usagef("--oidc-claim: %v", err)
		}
		t.Claims = append(t.Claims, cond)
	}
	if f.jwksFile != "" {
		b, err := os.ReadFile(f.jwksFile)
		if err != nil {
			return nil, fmt.Errorf("--oidc-jwks: %w", err)
		}
		if !json.Valid(b) {
			return nil, usagef("--oidc-jwks %s: not JSON", f.jwksFile)
		}
		t.JWKS = b
	}
	return t, nil
}

// role is the role the options describe (without its trust).
func (o *rolePutOptions) role() lease.Role {
	var view []lease.Rule
	for _, p := range o.paths {
		view = append(view, lease.Rule{Path: p, Actions: actions(strings.Split(o.actions, ","))})
	}
	return lease.Role{Name: o.name, Repo: o.repo, Branch: o.branch, ForkFrom: o.forkFrom, View: view,
		MaxTTL: lease.Duration(o.maxTTL), Budgets: o.budgets.budgets(), SensitivityMax: o.sensitivity, Egress: o.egress,
		Principal: o.principal, OnBehalfOf: o.onBehalfOf, BranchLimits: o.branchLimits.limits()}
}

// newRolePutCmd builds `nas role put`.
func newRolePutCmd() *cobra.Command {
	var o rolePutOptions
	cmd := &cobra.Command{
		Use:   "put NAME --repo REPO --paths GLOB --actions LIST [--fork-from main | --branch B] [--max-ttl 24h] [--oidc-issuer URL [--oidc-jwks FILE] --oidc-audience AUD [--oidc-subject PATTERN] [--oidc-claim k=v ...]]",
		Short: "Create or replace a role: its repository, branch policy, widest view, longest lifetime and budgets",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return runRolePut(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "repository the role works in")
	f.StringSliceVar(&o.paths, "paths", nil, "path glob (repeatable)")
	f.StringVar(&o.actions, "actions", "", "comma-separated actions")
	f.StringVar(&o.branch, "branch", "", "every run works on this branch")
	f.StringVar(&o.forkFrom, "fork-from", "", "every run forks ROLE/RUN from this ref (default main)")
	f.DurationVar(&o.maxTTL, "max-ttl", 24*time.Hour, "longest lease")
	f.StringVar(&o.sensitivity, "sensitivity-max", "", "public, private or secret")
	f.BoolVar(&o.egress, "egress", false, "runs may communicate outward")
	f.StringVar(&o.principal, "principal", "", "who runs act as (default role:NAME)")
	f.StringVar(&o.onBehalfOf, "on-behalf-of", "", "on whose behalf")
	o.budgets.add(cmd)
	o.branchLimits.add(cmd)
	o.oidc.add(cmd)
	return cmd
}

// runRolePut creates or replaces the role and prints it as JSON.
func runRolePut(ctx context.Context, o rolePutOptions) error {
	if o.repo == "" || len(o.paths) == 0 || o.actions == "" {
		return usagef("--repo, --paths and --actions are required")
	}
	r := o.role()
	t, err := o.oidc.trust()
	if err != nil {
		return err
	}
	r.OIDC = t
	return jsonCall(ctx, apiv1.RolePutRequest{Role: r}, &apiv1.RoleResponse{})
}

// roleShowOptions are the argument of `nas role show`.
type roleShowOptions struct{ name string }

// newRoleShowCmd builds `nas role show`.
func newRoleShowCmd() *cobra.Command {
	var o roleShowOptions
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a role",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return runRoleShow(cmd.Context(), o)
		},
	}
}

// runRoleShow prints the role as JSON.
func runRoleShow(ctx context.Context, o roleShowOptions) error {
	return jsonCall(ctx, apiv1.RoleGetRequest{Name: o.name}, &apiv1.RoleResponse{})
}

// roleListOptions are the options of `nas role list`: it has none.
type roleListOptions struct{}

// newRoleListCmd builds `nas role list`.
func newRoleListCmd() *cobra.Command {
	var o roleListOptions
	return &cobra.Command{
		Use:   "list",
		Short: "List roles",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRoleList(cmd.Context(), o)
		},
	}
}

// runRoleList prints every role as JSON.
func runRoleList(ctx context.Context, _ roleListOptions) error {
	return jsonCall(ctx, apiv1.RoleListRequest{}, &apiv1.RoleListResponse{})
}

// roleDeleteOptions are the argument of `nas role delete`.
type roleDeleteOptions struct{ name string }

// newRoleDeleteCmd builds `nas role delete`.
func newRoleDeleteCmd() *cobra.Command {
	var o roleDeleteOptions
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a role (its leases stay valid)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return runRoleDelete(cmd.Context(), o)
		},
	}
}

// runRoleDelete deletes the role; the leases issued within it stay valid.
func runRoleDelete(ctx context.Context, o roleDeleteOptions) error {
	return simpleCall(ctx, apiv1.RoleDeleteRequest{Name: o.name}, &apiv1.DeletedResponse{}, "deleted role "+o.name)
}
