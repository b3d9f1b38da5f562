//go:build unix

package program

import (
	"os/exec"
	"syscall"
)

// SetGroup starts cmd in a process group of its own, so that killing it
// also stops what it started. (No parent-death signal: Linux sends it
// when the starting thread ends, which in Go is not the gateway ending.
// A program sees its stdin end when the gateway does.)
func SetGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillGroup kills cmd's process group.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
