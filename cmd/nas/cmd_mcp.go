package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/mcpserver"
)

// newMCPCmd builds `nas mcp`: the agent tools over stdio.
func newMCPCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "mcp [--lease-json FILE]",
		Short: "Serve the agent tools (nas_list, nas_read, ...) over MCP on stdin and stdout, as one lease",
		Long: "mcp serves the Model Context Protocol on standard input and output until the host closes stdin\n" +
			"(or SIGINT, SIGTERM), for an MCP host such as Claude Desktop to start. Every tool acts through the\n" +
			"gateway with a lease's temporary credentials, on the lease's repository and branch: --lease-json FILE\n" +
			"(the output of 'nas lease create --json'), or the NAS_* or AWS_* variables with a session token.\n" +
			"The owner's long-lived keys are refused. Logs go to standard error; standard output is the protocol.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runMCP(cmd.Context()) },
	}
}

// runMCP serves the tools on stdio until the host hangs up or ctx ends.
func runMCP(ctx context.Context) error {
	cfg, lf, err := resolveClient()
	if err != nil {
		return err
	}
	c := nasclient.New(cfg)
	if !c.Temporary() {
		return usagef("nas mcp serves agents and takes a lease's temporary credentials: give --lease-json FILE " +
			"(from 'nas lease create --json'); the owner's long-lived keys would give every tool the owner's rights")
	}
	repo, br, err := mcpTarget(ctx, c, lf)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	s, err := mcpserver.New(mcpserver.Options{Client: c, Repo: repo, Branch: br, Version: buildVersion().Version, Log: log})
	if err != nil {
		return err
	}
	log.Info("serving MCP on stdio", "repo", repo, "branch", br, "endpoint", c.Endpoint())
	err = s.Run(ctx, &mcp.StdioTransport{})
	if ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("serve MCP: %w", err)
	}
	return nil
}

// mcpTarget is the lease's repository and branch: the lease file's, else
// the gateway's answer to lease/get.
func mcpTarget(ctx context.Context, c *nasclient.Client, lf *nasclient.LeaseFile) (repo, br string, err error) {
	if lf != nil {
		repo, br = lf.Repo, lf.Branch
	}
	if repo == "" || br == "" {
		var out apiv1.LeaseGetResponse
		if err := wrapClient(c).do(ctx, apiv1.LeaseGetRequest{}, &out); err != nil {
			return "", "", fmt.Errorf("ask the gateway for the lease's branch: %w", err)
		}
		repo, br = cmp.Or(repo, out.Lease.Repo), cmp.Or(br, out.Lease.Branch)
	}
	return repo, br, nil
}
