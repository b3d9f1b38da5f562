package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	nasclient "github.com/agentnas/nas/client"
)

// newDuCmd builds `nas du`.
func newDuCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "du REPO[@BRANCH][/PATH]",
		Short: "Count the objects and bytes under a path",
		Long: `Du adds up the object PATH, if there is one, and every key under PATH/ (the
whole branch without PATH), as ls --recursive lists them: a lease counts only
what it may list. --json prints one document: repo, branch, path, objects,
bytes.

` + addressHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDu(cmd.Context(), args[0])
		},
	}
}

// duJSON is what du prints with --json.
type duJSON struct {
	Repo    string `json:"repo"`
	Branch  string `json:"branch,omitempty"`
	Path    string `json:"path"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
}

// runDu sums the sizes of what a recursive ls lists.
func runDu(ctx context.Context, target string) error {
	obj, err := gatewayAddress(target)
	if err != nil {
		return err
	}
	c, err := newObjClient()
	if err != nil {
		return err
	}
	out := duJSON{Repo: obj.Repo, Branch: obj.Branch, Path: obj.Key}
	err = c.walk(ctx, obj, true, func(l nasclient.Listed) error {
		out.Objects++
		out.Bytes += l.Size
		return nil
	})
	if err != nil {
		return fmt.Errorf("du %s: %w", describe(obj), err)
	}
	if cf.json {
		return printJSON(&out)
	}
	fmt.Printf("%d bytes in %d object(s) at %s\n", out.Bytes, out.Objects, describe(obj))
	return nil
}
