package main

import (
	"context"

	"github.com/spf13/cobra"
)

// benchMovedOptions are the options of the hidden `nas bench`: it takes
// whatever it is given and ignores it.
type benchMovedOptions struct{}

// newBenchMovedCmd says where the benchmark harness went: it is the binary
// nas-bench, so that this one links no test double and no plotting.
func newBenchMovedCmd() *cobra.Command {
	var o benchMovedOptions
	return &cobra.Command{
		Use:                "bench",
		Short:              "The benchmark harness is the binary nas-bench (go run ./cmd/nas-bench --help)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchMoved(cmd.Context(), o)
		},
	}
}

// runBenchMoved fails with a usage error that names nas-bench.
func runBenchMoved(_ context.Context, _ benchMovedOptions) error {
	return usagef("the benchmark harness is the binary nas-bench: go build ./cmd/nas-bench && ./nas-bench --quick (same flags as nas bench had)")
}
