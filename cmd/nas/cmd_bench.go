package main

import "github.com/spf13/cobra"

// newBenchMovedCmd says where the benchmark harness went: it is the binary
// nas-bench, so that this one links no test double and no plotting.
func newBenchMovedCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "bench",
		Short:              "The benchmark harness is the binary nas-bench (go run ./cmd/nas-bench --help)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return usagef("the benchmark harness is the binary nas-bench: go build ./cmd/nas-bench && ./nas-bench --quick (same flags as nas bench had)")
		},
	}
}
