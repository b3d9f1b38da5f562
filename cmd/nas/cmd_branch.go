package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/bytesize"
)

// limitFlags are a branch's time to live and quotas on the command line.
type limitFlags struct {
	ttl          string
	quotaBytes   bytesize.Flag
	quotaObjects int64
}

func (l *limitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&l.ttl, "ttl", "", "recycle the branch after this long, e.g. 72h (0 removes the TTL)"+what)
	cmd.Flags().Var(&l.quotaBytes, "quota-bytes", "most bytes the branch's objects may add up to, e.g. 10GiB (0: no quota)"+what)
	cmd.Flags().Int64Var(&l.quotaObjects, "quota-objects", 0, "most objects the branch may hold (0: no quota)"+what)
}

// limits are the flags the user gave, as a control-API request takes
// them (unset: unchanged).
func (l *limitFlags) limits(cmd *cobra.Command) apiv1.Limits {
	var out apiv1.Limits
	if cmd.Flags().Changed("ttl") {
		out.TTL = &l.ttl
	}
	if cmd.Flags().Changed("quota-bytes") {
		out.QuotaBytes = &l.quotaBytes.V
	}
	if cmd.Flags().Changed("quota-objects") {
		out.QuotaObjects = &l.quotaObjects
	}
	return out
}

// describeBranch prints a branch's limits and usage.
func describeBranch(b *apiv1.Branch) string {
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

// showBranch runs a call that answers a branch and prints the branch.
func showBranch(ctx context.Context, req apiv1.Request) error {
	var out apiv1.BranchResponse
	if err := doCall(ctx, req, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	b := &out.Branch
	fmt.Printf("branch    %s\nhead      %s\ncreated   %s\nprotected %v%s\n", b.Name, b.Head, b.Created.Local().Format(time.RFC3339), b.Protected, describeBranch(b))
	return nil
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
			req := apiv1.BranchCreateRequest{Repo: args[0], Name: args[1], From: from, Limits: createLimits.limits(cmd)}
			var out apiv1.BranchResponse
			if err := doCall(cmd.Context(), req, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			fmt.Printf("created branch %s at %s\n", out.Branch.Name, out.Branch.Head)
			return nil
		},
	}
	create.Flags().StringVar(&from, "from", "", "branch or commit to fork from (default: the repository's default branch)")
	createLimits.add(create, "")
	show := &cobra.Command{
		Use:   "show REPO NAME",
		Short: "Show a branch: head, protection, time to live, quotas and usage",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showBranch(cmd.Context(), apiv1.BranchGetRequest{Repo: args[0], Name: args[1]})
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
			lim := setLimits.limits(cmd)
			if lim == (apiv1.Limits{}) {
				return usagef("give --ttl, --quota-bytes or --quota-objects")
			}
			return showBranch(cmd.Context(), apiv1.BranchLimitsRequest{Repo: args[0], Name: args[1], Limits: lim})
		},
	}
	setLimits.add(limits, "")
	list := &cobra.Command{
		Use:   "list REPO",
		Short: "List branches",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := listBranches(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			for _, b := range out.Branches {
				mark := ""
				if b.Protected {
					mark = "\tprotected"
				}
				if b.ExpiresAt != nil {
					mark += "\texpires " + b.ExpiresAt.Local().Format(time.RFC3339)
				}
				fmt.Printf("%s\t%s%s\n", b.Name, short(b.Head), mark)
			}
			return nil
		},
	}
	del := &cobra.Command{
		Use:   "delete REPO NAME",
		Short: "Delete a branch and its uncommitted changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd.Context(), apiv1.BranchDeleteRequest{Repo: args[0], Name: args[1]}, &apiv1.DeletedResponse{}, "deleted branch "+args[1])
		},
	}
	protect := &cobra.Command{
		Use:   "protect REPO NAME",
		Short: "Refuse every direct write to a branch (it then changes only through merges)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd.Context(), apiv1.BranchProtectRequest{Repo: args[0], Name: args[1]}, &apiv1.BranchResponse{}, "protected branch "+args[1])
		},
	}
	unprotect := &cobra.Command{
		Use:   "unprotect REPO NAME",
		Short: "Allow direct writes to a branch again",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd.Context(), apiv1.BranchUnprotectRequest{Repo: args[0], Name: args[1]}, &apiv1.BranchResponse{}, "unprotected branch "+args[1])
		},
	}
	cmd.AddCommand(create, show, list, del, protect, unprotect, limits)
	return cmd
}

// listBranches pages through branch/list: every branch of repo, in one
// answer.
func listBranches(ctx context.Context, repo string) (apiv1.BranchListResponse, error) {
	all := apiv1.BranchListResponse{Branches: []apiv1.Branch{}}
	c, err := newClient()
	if err != nil {
		return all, err
	}
	req := apiv1.BranchListRequest{Repo: repo}
	for {
		var page apiv1.BranchListResponse
		if err := c.do(ctx, req, &page); err != nil {
			return all, err
		}
		all.Branches = append(all.Branches, page.Branches...)
		if page.NextCursor == "" {
			return all, nil
		}
		req.Cursor = page.NextCursor
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
