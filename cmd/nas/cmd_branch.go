package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/bytesize"
)

// newBranchCmd builds `nas branch`: forking, listing, deleting and
// protecting branches, and their limits.
func newBranchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "branch", Short: "Fork, list, delete and protect branches"}
	cmd.AddCommand(newBranchCreateCmd(), newBranchShowCmd(), newBranchListCmd(), newBranchDeleteCmd(),
		newBranchProtectCmd(), newBranchUnprotectCmd(), newBranchLimitsCmd(), newBranchRestoreCmd())
	return cmd
}

// limitFlags are a branch's time to live and quotas on the command line.
type limitFlags struct {
	ttl          string
	quotaBytes   bytesize.Flag
	quotaObjects int64
	changed      func(name string) bool // whether the command line gave flag name
}

// add declares the flags on cmd; what ends each flag's help text.
func (l *limitFlags) add(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.StringVar(&l.ttl, "ttl", "", "recycle the branch after this long, e.g. 72h (0 removes the TTL)"+what)
	f.Var(&l.quotaBytes, "quota-bytes", "most bytes the branch's objects may add up to, e.g. 10GiB (0: no quota)"+what)
	f.Int64Var(&l.quotaObjects, "quota-objects", 0, "most objects the branch may hold (0: no quota)"+what)
	l.changed = f.Changed
}

// limits are the flags the user gave, as a control-API request takes
// them (unset: unchanged).
func (l *limitFlags) limits() apiv1.Limits {
	var out apiv1.Limits
	if l.changed("ttl") {
		out.TTL = &l.ttl
	}
	if l.changed("quota-bytes") {
		out.QuotaBytes = &l.quotaBytes.V
	}
	if l.changed("quota-objects") {
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

// branchCreateOptions are the arguments and flags of `nas branch create`.
type branchCreateOptions struct {
	repo, name, from string
	limits           limitFlags
}

// newBranchCreateCmd builds `nas branch create`.
func newBranchCreateCmd() *cobra.Command {
	var o branchCreateOptions
	cmd := &cobra.Command{
		Use:   "create REPO NAME [--from BRANCH_OR_COMMIT] [--ttl D] [--quota-bytes N] [--quota-objects N]",
		Short: "Fork a branch in constant time from a branch's head commit or a commit ID",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runBranchCreate(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.from, "from", "", "branch, commit or checkpoint (NAME, or BRANCH@NAME when several branches have one so named) to fork from (default: the repository's default branch)")
	o.limits.add(cmd, "")
	return cmd
}

// runBranchCreate forks the branch.
func runBranchCreate(ctx context.Context, o branchCreateOptions) error {
	req := apiv1.BranchCreateRequest{Repo: o.repo, Name: o.name, From: o.from, Limits: o.limits.limits()}
	var out apiv1.BranchResponse
	err := doCall(ctx, req, &out)
	if errorCode(err) == apiv1.CodeNotFound && o.from != "" {
		// Not a branch or commit: maybe a checkpoint's name.
		commit, cerr := checkpointCommit(ctx, o.repo, o.from)
		var ue usageError
		if errors.As(cerr, &ue) {
			return cerr
		}
		if commit != "" {
			req.From = commit
			err = doCall(ctx, req, &out)
		}
	}
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("created branch %s at %s\n", out.Branch.Name, out.Branch.Head)
	return nil
}

// branchShowOptions are the arguments of `nas branch show`.
type branchShowOptions struct{ repo, name string }

// newBranchShowCmd builds `nas branch show`.
func newBranchShowCmd() *cobra.Command {
	var o branchShowOptions
	return &cobra.Command{
		Use:   "show REPO NAME",
		Short: "Show a branch: head, protection, time to live, quotas and usage",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runBranchShow(cmd.Context(), o)
		},
	}
}

// runBranchShow prints the branch.
func runBranchShow(ctx context.Context, o branchShowOptions) error {
	return showBranch(ctx, apiv1.BranchGetRequest{Repo: o.repo, Name: o.name})
}

// branchLimitsOptions are the arguments and flags of `nas branch limits`.
type branchLimitsOptions struct {
	repo, name string
	limits     limitFlags
}

// newBranchLimitsCmd builds `nas branch limits`.
func newBranchLimitsCmd() *cobra.Command {
	var o branchLimitsOptions
	cmd := &cobra.Command{
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
			o.repo, o.name = args[0], args[1]
			return runBranchLimits(cmd.Context(), o)
		},
	}
	o.limits.add(cmd, "")
	return cmd
}

// runBranchLimits changes the limits given and prints the branch.
func runBranchLimits(ctx context.Context, o branchLimitsOptions) error {
	lim := o.limits.limits()
	if lim == (apiv1.Limits{}) {
		return usagef("give --ttl, --quota-bytes or --quota-objects")
	}
	return showBranch(ctx, apiv1.BranchLimitsRequest{Repo: o.repo, Name: o.name, Limits: lim})
}

// branchListOptions are the argument and flag of `nas branch list`.
type branchListOptions struct {
	repo    string
	deleted bool
}

// newBranchListCmd builds `nas branch list`.
func newBranchListCmd() *cobra.Command {
	var o branchListOptions
	cmd := &cobra.Command{
		Use:   "list REPO [--deleted]",
		Short: "List branches (with --deleted: the deleted ones that can still be restored)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			if o.deleted {
				return runBranchListDeleted(cmd.Context(), o)
			}
			return runBranchList(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.deleted, "deleted", false, "list deleted branches that 'nas branch restore' can bring back")
	return cmd
}

// runBranchList prints every branch of the repository: name, head,
// protection and expiry.
func runBranchList(ctx context.Context, o branchListOptions) error {
	out, err := listBranches(ctx, o.repo)
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

// short is a commit ID cut to 12 characters, as lists show it.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// branchDeleteOptions are the arguments of `nas branch delete`.
type branchDeleteOptions struct{ repo, name string }

// newBranchDeleteCmd builds `nas branch delete`.
func newBranchDeleteCmd() *cobra.Command {
	var o branchDeleteOptions
	return &cobra.Command{
		Use:   "delete REPO NAME",
		Short: "Delete a branch and its uncommitted changes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runBranchDelete(cmd.Context(), o)
		},
	}
}

// runBranchDelete deletes the branch.
func runBranchDelete(ctx context.Context, o branchDeleteOptions) error {
	return simpleCall(ctx, apiv1.BranchDeleteRequest{Repo: o.repo, Name: o.name}, &apiv1.DeletedResponse{}, "deleted branch "+o.name)
}

// branchProtectOptions are the arguments of `nas branch protect`.
type branchProtectOptions struct{ repo, name string }

// newBranchProtectCmd builds `nas branch protect`.
func newBranchProtectCmd() *cobra.Command {
	var o branchProtectOptions
	return &cobra.Command{
		Use:   "protect REPO NAME",
		Short: "Refuse every direct write to a branch (it then changes only through merges)",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runBranchProtect(cmd.Context(), o)
		},
	}
}

// runBranchProtect protects the branch.
func runBranchProtect(ctx context.Context, o branchProtectOptions) error {
	return simpleCall(ctx, apiv1.BranchProtectRequest{Repo: o.repo, Name: o.name}, &apiv1.BranchResponse{}, "protected branch "+o.name)
}

// branchUnprotectOptions are the arguments of `nas branch unprotect`.
type branchUnprotectOptions struct{ repo, name string }

// newBranchUnprotectCmd builds `nas branch unprotect`.
func newBranchUnprotectCmd() *cobra.Command {
	var o branchUnprotectOptions
	return &cobra.Command{
		Use:   "unprotect REPO NAME",
		Short: "Allow direct writes to a branch again",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.name = args[0], args[1]
			return runBranchUnprotect(cmd.Context(), o)
		},
	}
}

// runBranchUnprotect allows direct writes to the branch again.
func runBranchUnprotect(ctx context.Context, o branchUnprotectOptions) error {
	return simpleCall(ctx, apiv1.BranchUnprotectRequest{Repo: o.repo, Name: o.name}, &apiv1.BranchResponse{}, "unprotected branch "+o.name)
}

// checkpointCommit finds the commit a checkpoint reference names: NAME,
// the one checkpoint of that name on any branch of repo, or BRANCH@NAME.
// It returns "" when none matches; several matches are a usage error
// listing them.
func checkpointCommit(ctx context.Context, repo, ref string) (string, error) {
	var out apiv1.CheckpointListResponse
	if err := doCall(ctx, apiv1.CheckpointListRequest{Repo: repo}, &out); err != nil {
		return "", err
	}
	br, name, qualified := strings.Cut(ref, "@")
	var found []apiv1.Checkpoint
	for _, cp := range out.Checkpoints {
		if (qualified && cp.Branch == br && cp.Name == name) || (!qualified && cp.Name == ref) {
			found = append(found, cp)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0].Commit, nil
	}
	var refs []string
	for _, cp := range found {
		refs = append(refs, cp.Branch+"@"+cp.Name)
	}
	return "", usagef("checkpoint %q is on several branches; name one of %s", ref, strings.Join(refs, ", "))
}
