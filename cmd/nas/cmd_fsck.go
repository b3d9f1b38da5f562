package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gateway"
)

func newFsckCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "fsck [--data DIR]",
		Short: "Verify that every reference resolves and every chunk hashes to its name",
		Long: "With --data, fsck opens the data directory itself (the gateway must be stopped);\n" +
			"without it, it asks the running gateway.",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rep *branch.CheckReport
			if data != "" {
				g, err := gateway.Open(gateway.Config{DataDir: data, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
				if err != nil {
					return err
				}
				defer g.Close()
				if rep, err = g.Branches.Check(cmd.Context()); err != nil {
					return err
				}
			} else {
				c, err := newClient()
				if err != nil {
					return err
				}
				var out struct {
					Report *branch.CheckReport `json:"report"`
				}
				if err := c.call(cmd.Context(), "admin/fsck", map[string]any{}, &out); err != nil {
					return err
				}
				rep = out.Report
			}
			if cf.json {
				if err := printJSON(map[string]any{"report": rep, "ok": rep.OK()}); err != nil {
					return err
				}
			} else {
				fmt.Printf("%d repositories, %d branches, %d commits, %d entries, %d chunks (%d bytes, %d segments)\n",
					rep.Repos, rep.Branches, rep.Commits, rep.Entries, rep.Chunks.Chunks, rep.Chunks.Bytes, rep.Chunks.Segments)
				for _, p := range rep.Problems {
					fmt.Println("problem:", p)
				}
			}
			if !rep.OK() {
				return fmt.Errorf("fsck found %d problem(s)", len(rep.Problems))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "check this data directory offline")
	return cmd
}

func newGCCmd() *cobra.Command {
	var data string
	var retention, uploads time.Duration
	cmd := &cobra.Command{
		Use:   "gc [--data DIR]",
		Short: "Reclaim chunks, nodes and history no branch, retained commit or upload needs",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var stats any
			if data != "" {
				g, err := gateway.Open(gateway.Config{DataDir: data})
				if err != nil {
					return err
				}
				defer g.Close()
				st, err := g.Branches.Collect(cmd.Context(), branch.GCOptions{Retention: retention, UploadExpiry: uploads})
				if err != nil {
					return err
				}
				stats = st
			} else {
				c, err := newClient()
				if err != nil {
					return err
				}
				var out struct {
					Stats json.RawMessage `json:"stats"`
				}
				err = c.call(cmd.Context(), "admin/gc", map[string]any{
					"retention_seconds": int64(retention / time.Second), "upload_expiry_seconds": int64(uploads / time.Second)}, &out)
				if err != nil {
					return err
				}
				stats = out.Stats
			}
			return printJSON(stats)
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "collect in this data directory offline")
	cmd.Flags().DurationVar(&retention, "retention", branch.DefaultRetention, "keep history younger than this")
	cmd.Flags().DurationVar(&uploads, "upload-expiry", branch.DefaultUploadExpiry, "abort multipart uploads older than this")
	return cmd
}
