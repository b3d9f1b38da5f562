package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/apiv1"
)

// recordLine is an event on one line: sequence, time, kind and what is set
// of its run, lease, repository, branch, subject and decision.
func recordLine(r *apiv1.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\t%s\t%s", r.Seq, r.Time.Local().Format(time.RFC3339), r.Kind)
	for _, kv := range [][2]string{{"run", r.Run}, {"lease", r.Lease}, {"repo", r.Repo}, {"branch", r.Branch},
		{"path", r.Subject.Path}, {"commit", r.Subject.Commit}, {"effect", r.Decision.Effect}, {"rule", r.Decision.Rule}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, "\t%s=%s", kv[0], kv[1])
		}
	}
	return b.String()
}

// auditOptions are the flags of `nas audit`.
type auditOptions struct {
	run, lease, repo, commit string
	kinds                    []string
}

// newAuditCmd builds `nas audit`.
func newAuditCmd() *cobra.Command {
	var o auditOptions
	cmd := &cobra.Command{
		Use:   "audit [--run R] [--lease L] [--repo R] [--kind K]",
		Short: "List flight-recorder records, oldest first (--json: one apiv1 event per line)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.run, "run", "", "only this run")
	f.StringVar(&o.lease, "lease", "", "only this lease")
	f.StringVar(&o.repo, "repo", "", "only this repository")
	f.StringVar(&o.commit, "commit", "", "only records about this commit")
	f.StringSliceVar(&o.kinds, "kind", nil, "only these kinds (lease.issued, commit, denied, ...)")
	return cmd
}

// runAudit pages through the records that match and prints each as it
// arrives.
func runAudit(ctx context.Context, o auditOptions) error {
	c, err := newClient()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	req := apiv1.RecordListRequest{Run: o.run, Lease: o.lease, Repo: o.repo, Commit: o.commit, Kinds: o.kinds}
	for {
		var out apiv1.RecordListResponse
		if err := c.do(ctx, req, &out); err != nil {
			return err
		}
		for i := range out.Records {
			if cf.json {
				if err := enc.Encode(&out.Records[i]); err != nil {
					return err
				}
				continue
			}
			fmt.Println(recordLine(&out.Records[i]))
		}
		if out.NextCursor == "" {
			return nil
		}
		req.Cursor = out.NextCursor
	}
}
