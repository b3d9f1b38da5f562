//go:build unix

package source

import (
	"os/exec"
	"syscall"
)

// setProcGroup starts an adapter in a process group of its own, so that
// killing it also stops what it started. (No parent-death signal: Linux
// sends it when the starting thread ends, which in Go is not the gateway
// ending. An adapter sees its stdin end when the gateway does.)
func setProcGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the adapter's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
