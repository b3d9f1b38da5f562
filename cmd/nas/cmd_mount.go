package main

import "github.com/spf13/cobra"

// newMountCmd builds `nas mount`: a branch as a directory through FUSE.
func newMountCmd() *cobra.Command {
	return &cobra.Command{Use: "mount", Short: "Mount a branch as a directory (FUSE)", Hidden: true}
}

// newUnmountCmd builds `nas unmount`.
func newUnmountCmd() *cobra.Command {
	return &cobra.Command{Use: "unmount", Short: "Unmount a mounted branch", Hidden: true}
}
