package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// leaseWidenOptions are the flags of `nas lease widen`.
type leaseWidenOptions struct {
	paths           []string
	actions, reason string
	ttl             string
}

// newLeaseWidenCmd builds `nas lease widen`: a lease's request for wider
// authority, which waits at a gate.
func newLeaseWidenCmd() *cobra.Command {
	var o leaseWidenOptions
	cmd := &cobra.Command{
		Use:   "widen --paths GLOB --actions LIST --reason TEXT [--ttl 30m]",
		Short: "Ask a person for wider authority for the caller's lease: it waits at a gate (exit 3)",
		Long: "Run with a lease's credentials (--lease-json or NAS_SESSION_TOKEN). The request waits at a gate;\n" +
			"`nas gate approve GATE_ID` adds the paths to the lease as grants until --ttl (default: the lease's end).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLeaseWiden(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.paths, "paths", nil, "path glob wanted (repeatable)")
	f.StringVar(&o.actions, "actions", "", "comma-separated actions wanted on them: list,read,write,delete,propose")
	f.StringVar(&o.reason, "reason", "", "why, shown to the person who decides (required)")
	f.StringVar(&o.ttl, "ttl", "", "for how long, such as 30m (default: the rest of the lease)")
	return cmd
}

// runLeaseWiden files the request and says where it waits.
func runLeaseWiden(ctx context.Context, o leaseWidenOptions) error {
	if len(o.paths) == 0 || o.actions == "" || o.reason == "" {
		return usagef("--paths, --actions and --reason are required")
	}
	var out apiv1.GateResponse
	req := apiv1.LeaseWidenRequest{Paths: o.paths, Actions: strings.Split(o.actions, ","), TTL: o.ttl, Reason: o.reason}
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		if err := printJSON(&out); err != nil {
			return err
		}
	} else {
		fmt.Printf("gate %s: %s\n", out.Gate.ID, out.Gate.Status)
	}
	if out.Gate.Status == "pending" {
		return errWaiting
	}
	return nil
}
