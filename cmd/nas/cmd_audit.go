package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newExplainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "explain REPO COMMIT",
		Short: "Show the run, lease, events and read manifest behind a commit",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return jsonCall(cmd, "record/explain", map[string]any{"repo": args[0], "commit": args[1]})
		},
	}
}

type recordLine struct {
	Seq      uint64            `json:"seq"`
	Time     time.Time         `json:"time"`
	Kind     string            `json:"kind"`
	Run      string            `json:"run"`
	Lease    string            `json:"lease"`
	Repo     string            `json:"repo"`
	Branch   string            `json:"branch"`
	Subject  map[string]string `json:"subject"`
	Decision map[string]string `json:"decision"`
}

func newAuditCmd() *cobra.Command {
	var run, lease, repo, commit string
	var kinds []string
	cmd := &cobra.Command{
		Use:   "audit [--run R] [--lease L] [--repo R] [--kind K]",
		Short: "List flight-recorder records, oldest first",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			args := map[string]any{"run": run, "lease": lease, "repo": repo, "commit": commit, "kinds": kinds}
			enc := json.NewEncoder(os.Stdout)
			for {
				var out struct {
					Records    []json.RawMessage `json:"records"`
					NextCursor string            `json:"next_cursor"`
				}
				if err := c.call(cmd.Context(), "record/list", args, &out); err != nil {
					return err
				}
				for _, raw := range out.Records {
					if cf.json {
						if err := enc.Encode(raw); err != nil {
							return err
						}
						continue
					}
					var r recordLine
					if err := json.Unmarshal(raw, &r); err != nil {
						return err
					}
					var b strings.Builder
					fmt.Fprintf(&b, "%d\t%s\t%s", r.Seq, r.Time.Local().Format(time.RFC3339), r.Kind)
					for _, kv := range [][2]string{{"run", r.Run}, {"lease", r.Lease}, {"repo", r.Repo}, {"branch", r.Branch},
						{"path", r.Subject["path"]}, {"commit", r.Subject["commit"]}, {"effect", r.Decision["effect"]}, {"rule", r.Decision["rule"]}} {
						if kv[1] != "" {
							fmt.Fprintf(&b, "\t%s=%s", kv[0], kv[1])
						}
					}
					fmt.Println(b.String())
				}
				if out.NextCursor == "" {
					return nil
				}
				args["cursor"] = out.NextCursor
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&run, "run", "", "only this run")
	f.StringVar(&lease, "lease", "", "only this lease")
	f.StringVar(&repo, "repo", "", "only this repository")
	f.StringVar(&commit, "commit", "", "only records about this commit")
	f.StringSliceVar(&kinds, "kind", nil, "only these kinds (lease.issued, commit, denied, ...)")
	return cmd
}

func newVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Check the flight recorder's hash chain and indexes; fails after any record was altered",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			var out struct {
				OK       bool              `json:"ok"`
				Report   json.RawMessage   `json:"report"`
				Problems []json.RawMessage `json:"problems"`
			}
			if err := c.call(cmd.Context(), "record/verify", map[string]any{}, &out); err != nil {
				return err
			}
			if cf.json {
				if err := printJSON(out); err != nil {
					return err
				}
			} else {
				var rep struct {
					Records uint64 `json:"records"`
				}
				json.Unmarshal(out.Report, &rep)
				fmt.Printf("%d records checked\n", rep.Records)
				for _, p := range out.Problems {
					fmt.Println("problem:", string(p))
				}
			}
			if !out.OK {
				return fmt.Errorf("the flight recorder does not verify: %d problem(s)", len(out.Problems))
			}
			return nil
		},
	}
}
