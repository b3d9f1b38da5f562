package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// leaseOut is DESIGN's lease JSON: the specification's lease.json fields
// plus what a client or a mount needs to use the lease on its own.
type leaseOut map[string]any

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

func readViewFile(path string) (*viewFile, []map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var vf viewFile
	if err := yaml.Unmarshal(b, &vf); err != nil {
		return nil, nil, usagef("view file %s: %v", path, err)
	}
	var rules []map[string]any
	for _, r := range vf.View {
		acts := append(r.Ops, r.Actions...)
		if r.Path == "" || len(acts) == 0 {
			return nil, nil, usagef("view file %s: every entry needs path and ops", path)
		}
		rules = append(rules, map[string]any{"path": r.Path, "actions": acts})
	}
	return &vf, rules, nil
}

type budgetFlags struct{ read, written, requests int64 }

func (b *budgetFlags) add(cmd *cobra.Command) {
	cmd.Flags().Int64Var(&b.read, "budget-bytes-read", 0, "bytes the run may read (0: unlimited)")
	cmd.Flags().Int64Var(&b.written, "budget-bytes-written", 0, "bytes the run may write (0: unlimited)")
	cmd.Flags().Int64Var(&b.requests, "budget-requests", 0, "requests the run may make (0: unlimited)")
}

func (b *budgetFlags) json() map[string]int64 {
	return map[string]int64{"bytes_read": b.read, "bytes_written": b.written, "requests": b.requests}
}

// runBranchFlags bound the branch a run forks (lease create --fork-from,
// roles).
type runBranchFlags struct {
	ttl          time.Duration
	quotaBytes   sizeFlag
	quotaObjects int64
}

func (b *runBranchFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&b.ttl, "branch-ttl", 0, "recycle the run's forked branch after this long (never before its lease ends; 0: keep it)")
	cmd.Flags().Var(&b.quotaBytes, "branch-quota-bytes", "most bytes the run's forked branch may hold, e.g. 10GiB (0: no quota)")
	cmd.Flags().Int64Var(&b.quotaObjects, "branch-quota-objects", 0, "most objects the run's forked branch may hold (0: no quota)")
}

func (b *runBranchFlags) args(m map[string]any) {
	if b.ttl != 0 {
		m["branch_ttl"] = b.ttl.String()
	}
	if b.quotaBytes.v != 0 {
		m["branch_quota_bytes"] = b.quotaBytes.v
	}
	if b.quotaObjects != 0 {
		m["branch_quota_objects"] = b.quotaObjects
	}
}

func newLeaseCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "lease", Short: "Issue, show, list and revoke run leases (temporary credentials)"}
	var o struct {
		role, branch, forkFrom, purpose, viewFile, run, principal, onBehalfOf, sensitivity string
		paths                                                                              []string
		actions                                                                            string
		ttl                                                                                time.Duration
		egress                                                                             bool
		budgets                                                                            budgetFlags
		branchLimits                                                                       runBranchFlags
	}
	create := &cobra.Command{
		Use:   "create REPO --role ROLE --paths GLOB --actions LIST [--fork-from main | --branch B]",
		Short: "Create a run with a lease (and, with --fork-from, its branch ROLE/RUN) and print its credentials",
		Long: "With a lease's own credentials (NAS_SESSION_TOKEN or --lease-json), create makes a child\n" +
			"lease, never wider than the caller; REPO and the branch are the caller's.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			req := map[string]any{"repo": args[0], "role": o.role, "branch": o.branch, "fork_from": o.forkFrom,
				"purpose": o.purpose, "run": o.run, "principal": o.principal, "on_behalf_of": o.onBehalfOf,
				"sensitivity_max": o.sensitivity, "egress": o.egress, "budgets": o.budgets.json()}
			if o.ttl != 0 {
				req["ttl"] = o.ttl.String()
			}
			o.branchLimits.args(req)
			if o.viewFile != "" {
				vf, rules, err := readViewFile(o.viewFile)
				if err != nil {
					return err
				}
				if len(o.paths) > 0 || o.actions != "" {
					return usagef("give --view or --paths/--actions, not both")
				}
				req["view"] = rules
				if o.role == "" {
					req["role"] = cmp.Or(vf.Role, vf.Name)
				}
				if o.purpose == "" {
					req["purpose"] = vf.Purpose
				}
			} else if len(o.paths) > 0 {
				if o.actions == "" {
					return usagef("--actions is required with --paths (e.g. --actions read,write)")
				}
				req["paths"] = o.paths
				req["actions"] = strings.Split(o.actions, ",")
			}
			if o.forkFrom == "" && o.branch == "" && c.creds.SessionToken == "" {
				req["fork_from"] = "main"
			}
			var out struct {
				Lease map[string]any `json:"lease"`
			}
			if err := c.call(cmd.Context(), "lease/create", req, &out); err != nil {
				return err
			}
			l := leaseOut(out.Lease)
			l["endpoint"] = c.endpoint
			if cf.json {
				return printJSON(l)
			}
			fmt.Printf("lease %v · run %v · branch %v · expires %v\n", l["lease_id"], l["run"], l["branch"], l["expires_at"])
			fmt.Printf("export AWS_ACCESS_KEY_ID=%v AWS_SECRET_ACCESS_KEY=%v AWS_SESSION_TOKEN=%v AWS_ENDPOINT_URL=%s\n",
				l["access_key_id"], l["secret_access_key"], l["session_token"], c.endpoint)
			return nil
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
			return jsonCall(cmd, "lease/get", map[string]any{"lease_id": id})
		},
	}
	var lf struct {
		run, role string
		active    bool
	}
	list := &cobra.Command{
		Use:   "list [REPO]",
		Short: "List leases, newest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			repo := ""
			if len(args) == 1 {
				repo = args[0]
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			if err := c.call(cmd.Context(), "lease/list", map[string]any{"repo": repo, "run": lf.run, "role": lf.role, "active": lf.active}, &raw); err != nil {
				return err
			}
			if cf.json {
				return printJSON(raw)
			}
			var out struct {
				Leases []struct {
					ID      string    `json:"lease_id"`
					Run     string    `json:"run"`
					Role    string    `json:"role"`
					Repo    string    `json:"repo"`
					Branch  string    `json:"branch"`
					Expires time.Time `json:"expires_at"`
					Revoked bool      `json:"revoked"`
				} `json:"leases"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			for _, l := range out.Leases {
				state := "active"
				switch {
				case l.Revoked:
					state = "revoked"
				case time.Now().After(l.Expires):
					state = "expired"
				}
				fmt.Printf("%s\t%s\t%s\t%s/%s\t%s\t%s\n", l.ID, l.Run, l.Role, l.Repo, l.Branch, l.Expires.Local().Format(time.RFC3339), state)
			}
			return nil
		},
	}
	list.Flags().StringVar(&lf.run, "run", "", "only this run")
	list.Flags().StringVar(&lf.role, "role", "", "only this role")
	list.Flags().BoolVar(&lf.active, "active", false, "only unexpired, unrevoked leases")
	revoke := &cobra.Command{
		Use:   "revoke LEASE_ID",
		Short: "Revoke a lease and every lease it minted, effective on the next request",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var out struct {
				Revoked []string `json:"revoked"`
			}
			if err := c.call(cmd.Context(), "lease/revoke", map[string]any{"lease_id": args[0]}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(out)
			}
			fmt.Printf("revoked %s\n", strings.Join(out.Revoked, ", "))
			return nil
		},
	}
	cmd.AddCommand(create, show, list, revoke)
	return cmd
}

// jsonCall runs a call and prints its JSON answer.
func jsonCall(cmd *cobra.Command, op string, args map[string]any) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := c.call(cmd.Context(), op, args, &raw); err != nil {
		return err
	}
	return printJSON(raw)
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
			return jsonCall(cmd, "share/grant", map[string]any{"lease_id": args[0], "path": args[1],
				"actions": strings.Split(actions, ","), "ttl": ttl.String(), "single_use": single})
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
			return jsonCall(cmd, "share/list", map[string]any{"lease_id": args[0]})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke LEASE_ID GRANT_ID",
		Short: "End a grant at once",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jsonCall(cmd, "share/revoke", map[string]any{"lease_id": args[0], "grant_id": args[1]})
		},
	}
	cmd.AddCommand(grant, list, revoke)
	return cmd
}

func newRoleCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "role", Short: "Define the roles STS AssumeRole issues leases within"}
	var o struct {
		repo, branch, forkFrom, actions, sensitivity, principal, onBehalfOf string
		paths                                                               []string
		maxTTL                                                              time.Duration
		egress                                                              bool
		budgets                                                             budgetFlags
		branchLimits                                                        runBranchFlags
	}
	put := &cobra.Command{
		Use:   "put NAME --repo REPO --paths GLOB --actions LIST [--fork-from main | --branch B] [--max-ttl 24h]",
		Short: "Create or replace a role: its repository, branch policy, widest view, longest lifetime and budgets",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.repo == "" || len(o.paths) == 0 || o.actions == "" {
				return usagef("--repo, --paths and --actions are required")
			}
			var view []map[string]any
			for _, p := range o.paths {
				view = append(view, map[string]any{"path": p, "actions": strings.Split(o.actions, ",")})
			}
			m := map[string]any{"name": args[0], "repo": o.repo, "branch": o.branch,
				"fork_from": o.forkFrom, "view": view, "max_ttl": o.maxTTL.String(), "budgets": o.budgets.json(),
				"sensitivity_max": o.sensitivity, "egress": o.egress, "principal": o.principal, "on_behalf_of": o.onBehalfOf}
			o.branchLimits.args(m)
			return jsonCall(cmd, "role/put", m)
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
		return jsonCall(cmd, "role/get", map[string]any{"name": args[0]})
	}}
	list := &cobra.Command{Use: "list", Short: "List roles", Args: exactArgs(0), RunE: func(cmd *cobra.Command, args []string) error {
		return jsonCall(cmd, "role/list", map[string]any{})
	}}
	del := &cobra.Command{Use: "delete NAME", Short: "Delete a role (its leases stay valid)", Args: exactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return simpleCall(cmd, "role/delete", map[string]any{"name": args[0]}, "deleted role "+args[0])
	}}
	cmd.AddCommand(put, show, list, del)
	return cmd
}
