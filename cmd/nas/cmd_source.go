package main

import "github.com/spf13/cobra"

// newSourceCmd builds `nas source`: attaching remote buckets and local
// folders to a repository.
func newSourceCmd() *cobra.Command {
	return &cobra.Command{Use: "source", Short: "Attach remote buckets and local folders (lazy sources)", Hidden: true}
}
