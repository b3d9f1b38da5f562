package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/bytesize"
	"github.com/agentnas/nas/lease"
)

// leaseFile is DESIGN's lease JSON, what `nas lease create --json` prints
// and --lease-json reads: the issued lease with its credentials (the
// specification's lease.json fields and what a client or a mount needs to
// use the lease on its own), and the gateway's endpoint.
type leaseFile struct {
	apiv1.Lease
	Endpoint string `json:"endpoint"`
}

// viewFile is an AFSP-style view file.
type viewFile struct {
	Name    string `yaml:"name"`
	Role    string `yaml:"role"`
	Purpose string `yaml:"purpose"`
	View    []struct {
		Path    string   `yaml:"path"`
		Ops     []string `yaml:"ops"`
		Actions []string `yaml:"actions"`
	} `yaml:"view"`
}

// readViewFile reads a view file and the rules it grants.
func readViewFile(path string) (*viewFile, []lease.Rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var vf viewFile
	if err := yaml.Unmarshal(b, &vf); err != nil {
		return nil, nil, usagef("view file %s: %v", path, err)
	}
	var rules []lease.Rule
	for _, r := range vf.View {
		acts := append(r.Ops, r.Actions...)
		if r.Path == "" || len(acts) == 0 {
			return nil, nil, usagef("view file %s: every entry needs path and ops", path)
		}
		rules = append(rules, lease.Rule{Path: r.Path, Actions: actions(acts)})
	}
	return &vf, rules, nil
}

// actions are action names as a lease takes them.
func actions(names []string) []lease.Action {
	out := make([]lease.Action, 0, len(names))
	for _, n := range names {
		out = append(out, lease.Action(n))
	}
	return out
}

// budgetFlags are a run's budgets on the command line.
type budgetFlags struct{ read, written, requests int64 }

// add declares the budget flags on cmd.
func (b *budgetFlags) add(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&b.read, "budget-bytes-read", 0, "bytes the run may read (0: unlimited)")
	cmd.Flags().Int64Var(&b.written, "budget-bytes-written", 0, "bytes the run may write (0: unlimited)")
	cmd.Flags().Int64Var(&b.requests, "budget-requests", 0, "requests the run may make (0: unlimited)")
}

// budgets are the budgets the flags give.
func (b *budgetFlags) budgets() lease.Budgets {
	return lease.Budgets{BytesRead: b.read, BytesWritten: b.written, Requests: b.requests}
}

// runBranchFlags bound the branch a run forks (lease create --fork-from,
// roles).
type runBranchFlags struct {
	ttl          time.Duration
	quotaBytes   bytesize.Flag
	quotaObjects int64
}

// add declares the branch flags on cmd.
func (b *runBranchFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&b.ttl, "branch-ttl", 0, "recycle the run's forked branch after this long (never before its lease ends; 0: keep it)")
	cmd.Flags().Var(&b.quotaBytes, "branch-quota-bytes", "most bytes the run's forked branch may hold, e.g. 10GiB (0: no quota)")
	cmd.Flags().Int64Var(&b.quotaObjects, "branch-quota-objects", 0, "most objects the run's forked branch may hold (0: no quota)")
}

// limits are the branch limits the flags give.
func (b *runBranchFlags) limits() lease.BranchLimits {
	return lease.BranchLimits{TTL: lease.Duration(b.ttl), QuotaBytes: b.quotaBytes.V, QuotaObjects: b.quotaObjects}
}

// leaseCreateOptions are the argument and flags of `nas lease create`.
type leaseCreateOptions struct {
	repo                                                                               string
	role, branch, forkFrom, purpose, viewFile, run, principal, onBehalfOf, sensitivity string
	paths                                                                              []string
	actions                                                                            string
	ttl                                                                                time.Duration
	egress, mcpToken                                                                   bool
	budgets                                                                            budgetFlags
	branchLimits                                                                       runBranchFlags
}

// request is the lease/create request of the options; temporary says the
// caller holds a lease (which makes a child).
func (o *leaseCreateOptions) request(temporary bool) (apiv1.LeaseCreateRequest, error) {
	req := apiv1.LeaseCreateRequest{Repo: o.repo, Role: o.role, Branch: o.branch, ForkFrom: o.forkFrom,
		Purpose: o.purpose, Run: o.run, Principal: o.principal, OnBehalfOf: o.onBehalfOf,
		SensitivityMax: o.sensitivity, Egress: o.egress, Budgets: o.budgets.budgets(), BranchLimits: o.branchLimits.limits(),
		MCPToken: o.mcpToken}
	if o.ttl != 0 {
		req.TTL = o.ttl.String()
	}
	if o.viewFile != "" {
		vf, rules, err := readViewFile(o.viewFile)
		if err != nil {
			return req, err
		}
		if len(o.paths) > 0 || o.actions != "" {
			return req, usagef("give --view or --paths/--actions, not both")
		}
		req.View = rules
		req.Role = cmp.Or(req.Role, vf.Role, vf.Name)
		req.Purpose = cmp.Or(req.Purpose, vf.Purpose)
	} else if len(o.paths) > 0 {
		if o.actions == "" {
			return req, usagef("--actions is required with --paths (e.g. --actions read,write)")
		}
		req.Paths = o.paths
		req.Actions = strings.Split(o.actions, ",")
	}
	if o.forkFrom == "" && o.branch == "" && !temporary {
		req.ForkFrom = "main"
	}
	return req, nil
}

// newLeaseCmd builds `nas lease`: run leases, the temporary credentials
// of runs.
func newLeaseCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "lease", Short: "Issue, show, list and revoke run leases (temporary credentials)"}
	cmd.AddCommand(newLeaseCreateCmd(), newLeaseShowCmd(), newLeaseListCmd(), newLeaseRevokeCmd(), newLeaseWidenCmd())
	return cmd
}

// newLeaseCreateCmd builds `nas lease create`.
func newLeaseCreateCmd() *cobra.Command {
	var o leaseCreateOptions
	cmd := &cobra.Command{
		Use:   "create REPO --role ROLE --paths GLOB --actions LIST [--fork-from main | --branch B]",
		Short: "Create a run with a lease (and, with --fork-from, its branch ROLE/RUN) and print its credentials",
		Long: "With a lease's own credentials (NAS_SESSION_TOKEN or --lease-json), create makes a child\n" +
			"lease, never wider than the caller; REPO and the branch are the caller's.\n" +
			"--json prints the lease JSON --lease-json reads: the lease, its credentials and the endpoint.\n" +
			"--mcp-token also mints a bearer token for MCP over streamable HTTP at ENDPOINT/_nas/mcp, bound to\n" +
			"this lease and ended with it; it is shown in this answer only (mcp_token in --json).",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			return runLeaseCreate(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.role, "role", "", "the role the run acts as (names its branch ROLE/RUN)")
	f.StringSliceVar(&o.paths, "paths", nil, "path glob the lease may reach (repeatable; / is the repository root, * one segment, ** any depth)")
	f.StringVar(&o.actions, "actions", "", "comma-separated actions on those paths: list,read,write,delete,propose")
	f.DurationVar(&o.ttl, "ttl", 0, "lifetime (default 4h, at most 24h)")
	f.StringVar(&o.branch, "branch", "", "work on this existing branch")
	f.StringVar(&o.forkFrom, "fork-from", "", "fork the run's branch ROLE/RUN from this branch or commit (default main)")
	f.StringVar(&o.purpose, "purpose", "", "what the run is for (recorded)")
	f.StringVar(&o.viewFile, "view", "", "AFSP-style YAML view file instead of --paths/--actions")
	f.StringVar(&o.run, "run", "", "continue this run (default: a new one)")
	f.StringVar(&o.principal, "principal", "", "who the run acts as (default role:ROLE)")
	f.StringVar(&o.onBehalfOf, "on-behalf-of", "", "on whose behalf (default the caller)")
	f.StringVar(&o.sensitivity, "sensitivity-max", "", "highest sensitivity the run may touch: public, private, secret")
	f.BoolVar(&o.egress, "egress", false, "the run may communicate outward")
	f.BoolVar(&o.mcpToken, "mcp-token", false, "also mint a bearer token for MCP over HTTP at ENDPOINT/_nas/mcp, shown once (owner only)")
	o.budgets.add(cmd)
	o.branchLimits.add(cmd)
	return cmd
}

// runLeaseCreate issues the lease (a child of the caller's, when the
// caller holds one) and prints it.
func runLeaseCreate(ctx context.Context, o leaseCreateOptions) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	req, err := o.request(c.creds.SessionToken != "")
	if err != nil {
		return err
	}
	var out apiv1.LeaseResponse
	if err := c.do(ctx, req, &out); err != nil {
		return err
	}
	return printLease(leaseFile{Lease: out.Lease, Endpoint: c.endpoint})
}

// printLease prints an issued lease: its lease JSON with --json, else
// what to export to use it.
func printLease(l leaseFile) error {
	if cf.json {
		return printJSON(&l)
	}
	fmt.Printf("lease %s · run %s · branch %s · expires %s\n", l.ID, l.Run, l.Branch, l.ExpiresAt.Format(time.RFC3339Nano))
	fmt.Printf("export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_SESSION_TOKEN=%s AWS_ENDPOINT_URL=%s\n",
		l.AccessKeyID, l.SecretAccessKey, l.SessionToken, l.Endpoint)
	if l.MCPToken != "" {
		fmt.Printf("mcp %s/_nas/mcp · Authorization: Bearer %s (shown once; it ends with the lease)\n", strings.TrimSuffix(l.Endpoint, "/"), l.MCPToken)
	}
	return nil
}

// leaseShowOptions are the argument of `nas lease show`.
type leaseShowOptions struct {
	id string // "": the caller's own lease
}

// newLeaseShowCmd builds `nas lease show`.
func newLeaseShowCmd() *cobra.Command {
	var o leaseShowOptions
	return &cobra.Command{
		Use:   "show [LEASE_ID]",
		Short: "Show a lease, its remaining budgets and grants (default: the caller's own lease)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.id = optArg(args, 0)
			return runLeaseShow(cmd.Context(), o)
		},
	}
}

// runLeaseShow prints the lease as JSON.
func runLeaseShow(ctx context.Context, o leaseShowOptions) error {
	return jsonCall(ctx, apiv1.LeaseGetRequest{LeaseID: o.id}, &apiv1.LeaseGetResponse{})
}

// leaseListOptions are the argument and flags of `nas lease list`.
type leaseListOptions struct {
	repo, run, role string
	active          bool
}

// newLeaseListCmd builds `nas lease list`.
func newLeaseListCmd() *cobra.Command {
	var o leaseListOptions
	cmd := &cobra.Command{
		Use:   "list [REPO]",
		Short: "List leases, newest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = optArg(args, 0)
			return runLeaseList(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.run, "run", "", "only this run")
	cmd.Flags().StringVar(&o.role, "role", "", "only this role")
	cmd.Flags().BoolVar(&o.active, "active", false, "only unexpired, unrevoked leases")
	return cmd
}

// runLeaseList prints the leases, one a line with their state.
func runLeaseList(ctx context.Context, o leaseListOptions) error {
	var out apiv1.LeaseListResponse
	if err := doCall(ctx, apiv1.LeaseListRequest{Repo: o.repo, Run: o.run, Role: o.role, Active: o.active}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, l := range out.Leases {
		state := "active"
		switch {
		case l.Revoked:
			state = "revoked"
		case time.Now().After(l.ExpiresAt):
			state = "expired"
		}
		fmt.Printf("%s\t%s\t%s\t%s/%s\t%s\t%s\n", l.ID, l.Run, l.Role, l.Repo, l.Branch, l.ExpiresAt.Local().Format(time.RFC3339), state)
	}
	return nil
}

// leaseRevokeOptions are the argument of `nas lease revoke`.
type leaseRevokeOptions struct{ id string }

// newLeaseRevokeCmd builds `nas lease revoke`.
func newLeaseRevokeCmd() *cobra.Command {
	var o leaseRevokeOptions
	return &cobra.Command{
		Use:   "revoke LEASE_ID",
		Short: "Revoke a lease and every lease it minted, effective on the next request",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.id = args[0]
			return runLeaseRevoke(cmd.Context(), o)
		},
	}
}

// runLeaseRevoke revokes the lease and prints every lease that ended.
func runLeaseRevoke(ctx context.Context, o leaseRevokeOptions) error {
	var out apiv1.LeaseRevokeResponse
	if err := doCall(ctx, apiv1.LeaseRevokeRequest{LeaseID: o.id}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("revoked %s\n", strings.Join(out.Revoked, ", "))
	return nil
}
