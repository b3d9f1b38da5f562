package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

// newUnmountCmd builds `nas unmount`.
func newUnmountCmd() *cobra.Command {
	var lazy bool
	cmd := &cobra.Command{
		Use:   "unmount DIR [--lazy]",
		Short: "Unmount a mounted branch (the mount uploads and commits what is pending first)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUnmount(args[0], lazy)
		},
	}
	cmd.Flags().BoolVar(&lazy, "lazy", false, "detach now even if a process still uses the mount")
	return cmd
}

func runUnmount(dir string, lazy bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	flags := 0
	if lazy {
		flags = syscall.MNT_DETACH
	}
	err = syscall.Unmount(abs, flags)
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.EPERM) {
		// Not root: the setuid helper of the FUSE package can.
		args := []string{"-u", abs}
		if lazy {
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
