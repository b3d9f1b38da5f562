package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

func newRepoCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "repo", Short: "Create, list and delete repositories (S3 buckets)"}
	var unprotected bool
	create := &cobra.Command{
		Use:   "create REPO",
		Short: "Create a repository whose main branch is protected (changes only through merges)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			protected := !unprotected
			var out apiv1.RepoResponse
			if err := doCall(cmd.Context(), apiv1.RepoCreateRequest{Repo: args[0], Protected: &protected}, &out); err != nil {
				return err
			}
			if cf.json {
				return printJSON(&out)
			}
			state := "protected"
			if unprotected {
				state = "unprotected"
			}
			fmt.Printf("created repository %s (main is %s)\n", args[0], state)
			return nil
		},
	}
	create.Flags().BoolVar(&unprotected, "unprotected", false, "leave main writable")
	list := &cobra.Command{
		Use:   "list",
		Short: "List repositories",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := listRepos(cmd.Context())
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
		},
	}
	del := &cobra.Command{
		Use:   "delete REPO",
		Short: "Delete a repository whose branches hold no objects",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return simpleCall(cmd.Context(), apiv1.RepoDeleteRequest{Repo: args[0]}, &apiv1.DeletedResponse{}, "deleted repository "+args[0])
		},
	}
	cmd.AddCommand(create, list, del)
	return cmd
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
