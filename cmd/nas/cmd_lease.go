package main

import (
	"cmp"
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

type budgetFlags struct{ read, written, requests int64 }

func (b *budgetFlags) add(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&b.read, "budget-bytes-read", 0, "bytes the run may read (0: unlimited)")
	cmd.Flags().Int64Var(&b.written, "budget-bytes-written", 0, "bytes the run may write (0: unlimited)")
	cmd.Flags().Int64Var(&b.requests, "budget-requests", 0, "requests the run may make (0: unlimited)")
}

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

func (b *runBranchFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&b.ttl, "branch-ttl", 0, "recycle the run's forked branch after this long (never before its lease ends; 0: keep it)")
	cmd.Flags().Var(&b.quotaBytes, "branch-quota-bytes", "most bytes the run's forked branch may hold, e.g. 10GiB (0: no quota)")
	cmd.Flags().Int64Var(&b.quotaObjects, "branch-quota-objects", 0, "most objects the run's forked branch may hold (0: no quota)")
}

func (b *runBranchFlags) limits() lease.BranchLimits {
	return lease.BranchLimits{TTL: lease.Duration(b.ttl), QuotaBytes: b.quotaBytes.V, QuotaObjects: b.quotaObjects}
}

// leaseOptions are the flags of `nas lease create`.
type leaseOptions struct {
	role, branch, forkFrom, purpose, viewFile, run, principal, onBehalfOf, sensitivity string
	paths                                                                              []string
	actions                                                                            string
	ttl                                                                                time.Duration
	egress                                                                             bool
	budgets                                                                            budgetFlags
	branchLimits                                                                       runBranchFlags
}

// request is the lease/create request of the flags for repo; temporary
// says the caller holds a lease (which makes a child).
func (o *leaseOptions) request(repo string, temporary bool) (apiv1.LeaseCreateRequest, error) {
	req := apiv1.LeaseCreateRequest{Repo: repo, Role: o.role, Branch: o.branch, ForkFrom: o.forkFrom,
		Purpose: o.purpose, Run: o.run, Principal: o.principal, OnBehalfOf: o.onBehalfOf,
		SensitivityMax: o.sensitivity, Egress: o.egress, Budgets: o.budgets.budgets(), BranchLimits: o.branchLimits.limits()}
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

func newLeaseCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "lease", Short: "Issue, show, list and revoke run leases (temporary credentials)"}
	var o leaseOptions
	create := &cobra.Command{
		Use:   "create REPO --role ROLE --paths GLOB --actions LIST [--fork-from main | --branch B]",
		Short: "Create a run with a lease (and, with --fork-from, its branch ROLE/RUN) and print its credentials",
		Long: "With a lease's own credentials (NAS_SESSION_TOKEN or --lease-json), create makes a child\n" +
			"lease, never wider than the caller; REPO and the branch are the caller's.\n" +
			"--json prints the lease JSON --lease-json reads: the lease, its credentials and the endpoint.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			req, err := o.request(args[0], c.creds.SessionToken != "")
			if err != nil {
				return err
			}
			var out apiv1.LeaseResponse
			if err := c.do(cmd.Context(), req, &out); err != nil {
				return err
			}
			return printLease(leaseFile{Lease: out.Lease, Endpoint: c.endpoint})
		},
	}
	f := create.Flags()
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
	o.budgets.add(create)
	o.branchLimits.add(create)

	show := &cobra.Command{
		Use:   "show [LEASE_ID]",
		Short: "Show a lease, its remaining budgets and grants (default: the caller's own lease)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			return jsonCall(cmd.Context(), apiv1.LeaseGetRequest{LeaseID: id}, &apiv1.LeaseGetResponse{})
		},
	}
	cmd.AddCommand(create, show, newLeaseListCmd(), newLeaseRevokeCmd())
	return cmd
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
	return nil
}

func newLeaseListCmd() *cobra.Command {
	var req apiv1.LeaseListRequest
	list := &cobra.Command{
		Use:   "list [REPO]",
		Short: "List leases, newest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				req.Repo = args[0]
			}
			var out apiv1.LeaseListResponse
			if err := doCall(cmd.Context(), req, &out); err != nil {
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
		},
	}
	list.Flags().StringVar(&req.Run, "run", "", "only this run")
	list.Flags().StringVar(&req.Role, "role", "", "only this role")
	list.Flags().BoolVar(&req.Active, "active", false, "only unexpired, unrevoked leases")
	return list
}

func newLeaseRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke LEASE_ID",
		Short: "Revoke a lease and every lease it minted, effective on the next request",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out apiv1.LeaseRevokeResponse
			if err := doCall(cmd.Context(), apiv1.LeaseRevokeRequest{LeaseID: args[0]}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			fmt.Printf("revoked %s\n", strings.Join(out.Revoked, ", "))
			return nil
		},
	}
}

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
