package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

type branchJSON struct {
	Name         string     `json:"name"`
	Head         string     `json:"head"`
	Base         string     `json:"base"`
	Protected    bool       `json:"protected"`
	Created      time.Time  `json:"created"`
	ExpiresAt    *time.Time `json:"expires_at"`
	QuotaBytes   int64      `json:"quota_bytes"`
	QuotaObjects int64      `json:"quota_objects"`
	Usage        *struct {
		Bytes   int64 `json:"bytes"`
		Objects int64 `json:"objects"`
	} `json:"usage"`
}

// limitFlags are a branch's time to live and quotas on the command line.
type limitFlags struct {
	ttl          string
	quotaBytes   sizeFlag
	quotaObjects int64
}

func (l *limitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&l.ttl, "ttl", "", "recycle the branch after this long, e.g. 72h (0 removes the TTL)"+what)
	cmd.Flags().Var(&l.quotaBytes, "quota-bytes", "most bytes the branch's objects may add up to, e.g. 10GiB (0: no quota)"+what)
	cmd.Flags().Int64Var(&l.quotaObjects, "quota-objects", 0, "most objects the branch may hold (0: no quota)"+what)
}

// args adds the flags the user gave to a control API call.
func (l *limitFlags) args(cmd *cobra.Command, m map[string]any) {
	if cmd.Flags().Changed("ttl") {
		m["ttl"] = l.ttl
	}
	if cmd.Flags().Changed("quota-bytes") {
		m["quota_bytes"] = l.quotaBytes.v
	}
	if cmd.Flags().Changed("quota-objects") {
		m["quota_objects"] = l.quotaObjects
	}
}

// describe prints a branch's limits and usage.
func (b *branchJSON) describe() string {
	s := ""
	if b.ExpiresAt != nil {
		s += fmt.Sprintf("\nexpires   %s (in %s)", b.ExpiresAt.Local().Format(time.RFC3339), time.Until(*b.ExpiresAt).Round(time.Second))
	}
	if b.QuotaBytes > 0 || b.QuotaObjects > 0 {
		quota := func(n int64) string {
			if n == 0 {
				return "no quota"
			}
			return fmt.Sprint("quota ", n)
		}
		if b.Usage != nil {
			s += fmt.Sprintf("\nbytes     %d (%s)\nobjects   %d (%s)", b.Usage.Bytes, quota(b.QuotaBytes), b.Usage.Objects, quota(b.QuotaObjects))
		} else {
			s += fmt.Sprintf("\nbytes     %s\nobjects   %s", quota(b.QuotaBytes), quota(b.QuotaObjects))
		}
	}
	return s
}

func newBranchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "branch", Short: "Fork, list, delete and protect branches"}
	var from string
	var createLimits, setLimits limitFlags
	create := &cobra.Command{
		Use:   "create REPO NAME [--from BRANCH_OR_COMMIT] [--ttl D] [--quota-bytes N] [--quota-objects N]",
		Short: "Fork a branch in constant time from a branch's head commit or a commit ID",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var raw json.RawMessage
			m := map[string]any{"repo": args[0], "name": args[1], "from": from}
			createLimits.args(cmd, m)
			if err := c.call(cmd.Context(), "branch/create", m, &raw); err != nil {
				return err
			}
			if cf.json {
				return printJSON(raw)
			}
			var out struct {
				Branch branchJSON `json:"branch"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return err
			}
			fmt.Printf("created branch %s at %s\n", out.Branch.Name, out.Branch.Head)
			return nil
		},
	}
	create.Flags().StringVar(&from, "from", "", "branch or commit to fork from (default: the repository's default branch)")
	createLimits.add(create, "")
	showBranch := func(cmd *cobra.Command, op string, m map[string]any) error {
		c, err := newClient()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := c.call(cmd.Context(), op, m, &raw); err != nil {
			return err
		}
		if cf.json {
			return printJSON(raw)
		}
		var out struct {
			Branch branchJSON `json:"branch"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return err
		}
		b := out.Branch
		fmt.Printf("branch    %s\nhead      %s\ncreated   %s\nprotected %v%s\n", b.Name, b.Head, b.Created.Local().Format(time.RFC3339), b.Protected, b.describe())
		return nil
	}
	show := &cobra.Command{
		Use:   "show REPO NAME",
		Short: "Show a branch: head, protection, time to live, quotas and usage",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showBranch(cmd, "branch/get", map[string]any{"repo": args[0], "name": args[1]})
		},
	}
	limits := &cobra.Command{
		Use:   "limits REPO NAME [--ttl D] [--quota-bytes N] [--quota-objects N]",
		Short: "Change a branch's time to live (from now) and quotas; 0 removes one",
		Long: `Change a branch's time to live and quotas. Only the flags given change.

When the time to live runs out the branch is gone for reads and writes, and
the gateway recycles it (its unique data becomes garbage for the next
collection). The default branch and protected branches cannot expire.

A write that would take the branch beyond a quota is refused with
QuotaExceeded (EDQUOT on a mount); writes that shrink it always pass, so a
branch over a lowered quota can still be cleaned up.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			m := map[string]any{"repo": args[0], "name": args[1]}
			setLimits.args(cmd, m)
			if len(m) == 2 {
				return usagef("give --ttl, --quota-bytes or --quota-objects")
			}
			return showBranch(cmd, "branch/limits", m)
		},
	}
	setLimits.add(limits, "")
	list := &cobra.Command{
		Use:   "list REPO",
		Short: "List branches",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			cursor := ""
			var all []json.RawMessage
			for {
				var out struct {
					Branches   []json.RawMessage `json:"branches"`
					NextCursor string            `json:"next_cursor"`
				}
				if err := c.call(cmd.Context(), "branch/list", map[string]any{"repo": args[0], "cursor": cursor}, &out); err != nil {
					return err
				}
				for _, b := range out.Branches {
					if cf.json {
						all = append(all, b)
						continue
					}
					var bj branchJSON
					if err := json.Unmarshal(b, &bj); err != nil {
						return err
					}
					mark := ""
					if bj.Protected {
						mark = "\tprotected"
					}
					if bj.ExpiresAt != nil {
						mark += "\texpires " + bj.ExpiresAt.Local().Format(time.RFC3339)
					}
					fmt.Printf("%s\t%s%s\n", bj.Name, short(bj.Head), mark)
				}
				if out.NextCursor == "" {
					break
				}
				cursor = out.NextCursor
			}
			if cf.json {
				return printJSON(map[string]any{"branches": all})
			}
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete REPO NAME",
		Short: "Delete a branch and its uncommitted changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "branch/delete", map[string]any{"repo": args[0], "name": args[1]}, "deleted branch "+args[1])
		},
	}
	protect := &cobra.Command{
		Use:   "protect REPO NAME",
		Short: "Refuse every direct write to a branch (it then changes only through merges)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "branch/protect", map[string]any{"repo": args[0], "name": args[1]}, "protected branch "+args[1])
		},
	}
	unprotect := &cobra.Command{
		Use:   "unprotect REPO NAME",
		Short: "Allow direct writes to a branch again",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd, "branch/unprotect", map[string]any{"repo": args[0], "name": args[1]}, "unprotected branch "+args[1])
		},
	}
	cmd.AddCommand(create, show, list, del, protect, unprotect, limits)
	return cmd
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
