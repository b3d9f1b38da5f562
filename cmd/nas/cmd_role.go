package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/lease"
)

// roleOptions are the flags of `nas role put`.
type roleOptions struct {
	repo, branch, forkFrom, actions, sensitivity, principal, onBehalfOf string
	paths                                                               []string
	maxTTL                                                              time.Duration
	egress                                                              bool
	budgets                                                             budgetFlags
	branchLimits                                                        runBranchFlags
}

// role is the role the flags describe.
func (o *roleOptions) role(name string) lease.Role {
	var view []lease.Rule
	for _, p := range o.paths {
		view = append(view, lease.Rule{Path: p, Actions: actions(strings.Split(o.actions, ","))})
	}
	return lease.Role{Name: name, Repo: o.repo, Branch: o.branch, ForkFrom: o.forkFrom, View: view,
		MaxTTL: lease.Duration(o.maxTTL), Budgets: o.budgets.budgets(), SensitivityMax: o.sensitivity, Egress: o.egress,
		Principal: o.principal, OnBehalfOf: o.onBehalfOf, BranchLimits: o.branchLimits.limits()}
}

func newRoleCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "role", Short: "Define the roles STS AssumeRole issues leases within"}
	var o roleOptions
	put := &cobra.Command{
		Use:   "put NAME --repo REPO --paths GLOB --actions LIST [--fork-from main | --branch B] [--max-ttl 24h]",
		Short: "Create or replace a role: its repository, branch policy, widest view, longest lifetime and budgets",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.repo == "" || len(o.paths) == 0 || o.actions == "" {
				return usagef("--repo, --paths and --actions are required")
			}
			return jsonCall(cmd.Context(), apiv1.RolePutRequest{Role: o.role(args[0])}, &apiv1.RoleResponse{})
		},
	}
	f := put.Flags()
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
	o.budgets.add(put)
	o.branchLimits.add(put)
	show := &cobra.Command{Use: "show NAME", Short: "Show a role", Args: exactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return jsonCall(cmd.Context(), apiv1.RoleGetRequest{Name: args[0]}, &apiv1.RoleResponse{})
	}}
	list := &cobra.Command{Use: "list", Short: "List roles", Args: exactArgs(0), RunE: func(cmd *cobra.Command, args []string) error {
		return jsonCall(cmd.Context(), apiv1.RoleListRequest{}, &apiv1.RoleListResponse{})
	}}
	del := &cobra.Command{Use: "delete NAME", Short: "Delete a role (its leases stay valid)", Args: exactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return simpleCall(cmd.Context(), apiv1.RoleDeleteRequest{Name: args[0]}, &apiv1.DeletedResponse{}, "deleted role "+args[0])
	}}
	cmd.AddCommand(put, show, list, del)
	return cmd
}
