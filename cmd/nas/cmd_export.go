package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/gitexport"
)

// exportOptions are the arguments and flags of `nas export`.
type exportOptions struct {
	repo, dest string
	commit     bool
}

// newExportCmd builds `nas export`.
func newExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export REPO DEST [--commit]",
		Short: "Write a repository and its whole history as a Git repository at DEST",
		Long: `Export writes REPO as a bare Git repository at DEST (which must not exist or
be empty): one Git commit per commit, with the provenance as trailers (Run,
Lease, Principal, On-Behalf-Of, Nas-Commit), the objects at escaped paths and
their metadata under .nas/ (see .nas/README in the export). nas import reads
it back with the same commit IDs. Uncommitted changes are not exported: the
command says which branches have some, and --commit commits them first
(one commit per branch that has staged changes). Owner only.`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.repo, o.dest = args[0], args[1]
			return runExport(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.commit, "commit", false, "commit every branch's staged changes before exporting")
	return cmd
}

// commitStaged commits the staged changes of every branch of repo that
// has some (protected branches change only through merges, so they have
// none) and says which it committed.
func commitStaged(ctx context.Context, repo string) error {
	var page apiv1.BranchListResponse
	cursor := ""
	for {
		if err := doCall(ctx, apiv1.BranchListRequest{Repo: repo, Page: apiv1.Page{Cursor: cursor}}, &page); err != nil {
			return err
		}
		for _, b := range page.Branches {
			if b.Protected {
				continue
			}
			var out apiv1.CommitResponse
			err := doCall(ctx, apiv1.CommitCreateRequest{Repo: repo, Branch: b.Name, Message: "nas export --commit"}, &out)
			switch {
			case errorCode(err) == apiv1.CodeNothingToCommit:
			case err != nil:
				return fmt.Errorf("commit %s/%s before the export: %w", repo, b.Name, err)
			default:
				fmt.Fprintf(os.Stderr, "nas: committed the staged changes of %s/%s\n", repo, b.Name)
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		cursor = page.NextCursor
	}
}

// transferJSON is what export and import print with --json: the
// repository, where it went to or came from, the gateway's report and how
// long it took.
type transferJSON struct {
	Repo    string        `json:"repo"`
	Dest    string        `json:"dest,omitempty"`
	Src     string        `json:"src,omitempty"`
	Report  *apiv1.Report `json:"report"`
	Seconds float64       `json:"seconds"`
}

// exportClient is a client for export and import streams, with the
// credentials and endpoint of every client command.
func exportClient() (*gitexport.Client, error) {
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	// A stream runs as long as the repository takes: no overall timeout.
	api := nasclient.New(nasclient.Config{Endpoint: c.endpoint, Credentials: aws.Credentials(c.creds), HTTP: &http.Client{}})
	return &gitexport.Client{C: api}, nil
}

// runExport writes the repository as a Git repository and says what was
// exported, and what was not.
func runExport(ctx context.Context, o exportOptions) error {
	c, err := exportClient()
	if err != nil {
		return err
	}
	if o.commit {
		if err := commitStaged(ctx, o.repo); err != nil {
			return err
		}
	}
	start := time.Now()
	rep, err := c.Export(ctx, o.repo, o.dest)
	if err != nil {
		return fmt.Errorf("export %s: %w", o.repo, err)
	}
	if cf.json {
		// The report holds the uncommitted branches too; the warning
		// still goes to stderr, so a script's log shows what is missing.
		if len(rep.Uncommitted) > 0 {
			fmt.Fprintf(os.Stderr, "nas: not exported: uncommitted changes on %d branch(es) (nas export --commit commits them first)\n", len(rep.Uncommitted))
		}
		return printJSON(&transferJSON{Repo: o.repo, Dest: o.dest, Report: rep, Seconds: time.Since(start).Seconds()})
	}
	fmt.Printf("exported %s to %s: %d commits, %d branches, %d changed keys, %d bytes in %s\n",
		o.repo, o.dest, rep.Commits, rep.Branches, rep.Entries, rep.Bytes, time.Since(start).Round(time.Millisecond))
	if s := gitexport.Summary(rep); s != "" {
		fmt.Fprintln(os.Stderr, "nas: not exported:", s, "(nas export --commit commits them first)")
	}
	return nil
}
