package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newShareCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "share", Short: "Share one more path into a run's view for a limited time"}
	var actions string
	var ttl time.Duration
	var single bool
	grant := &cobra.Command{
		Use:   "grant LEASE_ID PATH [--actions read] [--ttl 1h] [--single-use]",
		Short: "Grant a lease one more path; it disappears on expiry (or first use)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := apiv1.ShareGrantRequest{LeaseID: args[0], Path: args[1], Actions: strings.Split(actions, ","), TTL: ttl.String(), SingleUse: single}
			return jsonCall(cmd.Context(), req, &apiv1.GrantResponse{})
		},
	}
	grant.Flags().StringVar(&actions, "actions", "read", "comma-separated actions")
	grant.Flags().DurationVar(&ttl, "ttl", time.Hour, "lifetime of the grant")
	grant.Flags().BoolVar(&single, "single-use", false, "the path disappears after its first use")
	list := &cobra.Command{
		Use:   "list LEASE_ID",
		Short: "List a lease's grants, live or not",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jsonCall(cmd.Context(), apiv1.ShareListRequest{LeaseID: args[0]}, &apiv1.ShareListResponse{})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke LEASE_ID GRANT_ID",
		Short: "End a grant at once",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jsonCall(cmd.Context(), apiv1.ShareRevokeRequest{LeaseID: args[0], GrantID: args[1]}, &apiv1.GrantResponse{})
		},
	}
	cmd.AddCommand(grant, list, revoke)
	return cmd
}
