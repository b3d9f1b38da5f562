package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newShareCmd builds `nas share`: grants of one more path to a lease.
func newShareCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "share", Short: "Share one more path into a run's view for a limited time"}
	cmd.AddCommand(newShareGrantCmd(), newShareListCmd(), newShareRevokeCmd())
	return cmd
}

// shareGrantOptions are the arguments and flags of `nas share grant`.
type shareGrantOptions struct {
	leaseID, path, actions string
	ttl                    time.Duration
	singleUse              bool
}

// newShareGrantCmd builds `nas share grant`.
func newShareGrantCmd() *cobra.Command {
	var o shareGrantOptions
	cmd := &cobra.Command{
		Use:   "grant LEASE_ID PATH [--actions read] [--ttl 1h] [--single-use]",
		Short: "Grant a lease one more path; it disappears on expiry (or first use)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.leaseID, o.path = args[0], args[1]
			return runShareGrant(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.actions, "actions", "read", "comma-separated actions")
	cmd.Flags().DurationVar(&o.ttl, "ttl", time.Hour, "lifetime of the grant")
	cmd.Flags().BoolVar(&o.singleUse, "single-use", false, "the path disappears after its first use")
	return cmd
}

// runShareGrant grants the path and prints the grant as JSON.
func runShareGrant(ctx context.Context, o shareGrantOptions) error {
	req := apiv1.ShareGrantRequest{LeaseID: o.leaseID, Path: o.path, Actions: strings.Split(o.actions, ","), TTL: o.ttl.String(), SingleUse: o.singleUse}
	return jsonCall(ctx, req, &apiv1.GrantResponse{})
}

// shareListOptions are the argument of `nas share list`.
type shareListOptions struct{ leaseID string }

// newShareListCmd builds `nas share list`.
func newShareListCmd() *cobra.Command {
	var o shareListOptions
	return &cobra.Command{
		Use:   "list LEASE_ID",
		Short: "List a lease's grants, live or not",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.leaseID = args[0]
			return runShareList(cmd.Context(), o)
		},
	}
}

// runShareList prints the lease's grants as JSON.
func runShareList(ctx context.Context, o shareListOptions) error {
	return jsonCall(ctx, apiv1.ShareListRequest{LeaseID: o.leaseID}, &apiv1.ShareListResponse{})
}

// shareRevokeOptions are the arguments of `nas share revoke`.
type shareRevokeOptions struct{ leaseID, grantID string }

// newShareRevokeCmd builds `nas share revoke`.
func newShareRevokeCmd() *cobra.Command {
	var o shareRevokeOptions
	return &cobra.Command{
		Use:   "revoke LEASE_ID GRANT_ID",
		Short: "End a grant at once",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.leaseID, o.grantID = args[0], args[1]
			return runShareRevoke(cmd.Context(), o)
		},
	}
}

// runShareRevoke ends the grant and prints it as JSON.
func runShareRevoke(ctx context.Context, o shareRevokeOptions) error {
	return jsonCall(ctx, apiv1.ShareRevokeRequest{LeaseID: o.leaseID, GrantID: o.grantID}, &apiv1.GrantResponse{})
}
