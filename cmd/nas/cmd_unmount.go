package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// unmountOptions are the argument and flags of `nas unmount`.
type unmountOptions struct {
	dir  string
	lazy bool
}

// newUnmountCmd builds `nas unmount`.
func newUnmountCmd() *cobra.Command {
	var o unmountOptions
	cmd := &cobra.Command{
		Use:   "unmount DIR [--lazy]",
		Short: "Unmount a mounted branch (the mount uploads and commits what is pending first)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.dir = args[0]
			return runUnmount(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.lazy, "lazy", false, "detach now even if a process still uses the mount")
	return cmd
}

// runUnmount unmounts o.dir, through the FUSE package's setuid helper
// when this process may not; the mount's own process then commits and
// exits.
func runUnmount(_ context.Context, o unmountOptions) error {
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	flags := 0
	if o.lazy {
		flags = syscall.MNT_DETACH
	}
	err = syscall.Unmount(abs, flags)
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EPERM) {
		// Not root: the setuid helper of the FUSE package can.
		args := []string{"-u", abs}
		if o.lazy {
			args = []string{"-u", "-z", abs}
		}
		for _, helper := range []string{"fusermount3", "fusermount"} {
			if _, lerr := exec.LookPath(helper); lerr == nil {
				if out, xerr := exec.Command(helper, args...).CombinedOutput(); xerr != nil {
					return fmt.Errorf("%s: %s", helper, out)
				}
				return nil
			}
		}
	}
	if errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("unmount %s: a process still uses it (close it, or use --lazy): %w", abs, err)
	}
	return fmt.Errorf("unmount %s: %w", abs, err)
}
