package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// newRepoCmd builds `nas repo`: repositories (S3 buckets).
func newRepoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "repo", Short: "Create, list and delete repositories (S3 buckets)"}
	cmd.AddCommand(newRepoCreateCmd(), newRepoListCmd(), newRepoDeleteCmd())
	return cmd
}

// repoCreateOptions are the argument and flags of `nas repo create`.
type repoCreateOptions struct {
	repo        string
	unprotected bool
}

// newRepoCreateCmd builds `nas repo create`.
func newRepoCreateCmd() *cobra.Command {
	var o repoCreateOptions
	cmd := &cobra.Command{
		Use:   "create REPO",
		Short: "Create a repository whose main branch is protected (changes only through merges)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			return runRepoCreate(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.unprotected, "unprotected", false, "leave main writable")
	return cmd
}

// runRepoCreate creates the repository, its main branch protected unless
// asked otherwise.
func runRepoCreate(ctx context.Context, o repoCreateOptions) error {
	protected := !o.unprotected
	var out apiv1.RepoResponse
	if err := doCall(ctx, apiv1.RepoCreateRequest{Repo: o.repo, Protected: &protected}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	state := "protected"
	if o.unprotected {
		state = "unprotected"
	}
	fmt.Printf("created repository %s (main is %s)\n", o.repo, state)
	return nil
}

// repoListOptions are the options of `nas repo list`: it has none.
type repoListOptions struct{}

// newRepoListCmd builds `nas repo list`.
func newRepoListCmd() *cobra.Command {
	var o repoListOptions
	return &cobra.Command{
		Use:   "list",
		Short: "List repositories",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRepoList(cmd.Context(), o)
		},
	}
}

// runRepoList prints every repository with its creation time.
func runRepoList(ctx context.Context, _ repoListOptions) error {
	out, err := listRepos(ctx)
	if err != nil {
		return err
	}
	if cf.json {
		return printJSON(&out)
	}
	for _, r := range out.Repos {
		fmt.Printf("%s\t%s\n", r.Name, r.Created.Format(time.RFC3339Nano))
	}
	return nil
}

// listRepos pages through repo/list: every repository, in one answer.
func listRepos(ctx context.Context) (apiv1.RepoListResponse, error) {
	all := apiv1.RepoListResponse{Repos: []apiv1.Repo{}}
	c, err := newClient()
	if err != nil {
		return all, err
	}
	var req apiv1.RepoListRequest
	for {
		var page apiv1.RepoListResponse
		if err := c.do(ctx, req, &page); err != nil {
			return all, err
		}
		all.Repos = append(all.Repos, page.Repos...)
		if page.NextCursor == "" {
			return all, nil
		}
		req.Cursor = page.NextCursor
	}
}

// repoDeleteOptions are the argument of `nas repo delete`.
type repoDeleteOptions struct{ repo string }

// newRepoDeleteCmd builds `nas repo delete`.
func newRepoDeleteCmd() *cobra.Command {
	var o repoDeleteOptions
	return &cobra.Command{
		Use:   "delete REPO",
		Short: "Delete a repository whose branches hold no objects",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo = args[0]
			return runRepoDelete(cmd.Context(), o)
		},
	}
}

// runRepoDelete deletes the repository.
func runRepoDelete(ctx context.Context, o repoDeleteOptions) error {
	return simpleCall(ctx, apiv1.RepoDeleteRequest{Repo: o.repo}, &apiv1.DeletedResponse{}, "deleted repository "+o.repo)
}
