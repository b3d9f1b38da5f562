//go:build !unix

package program

import "os/exec"

// SetGroup does nothing where there are no process groups.
func SetGroup(*exec.Cmd) {}

// KillGroup kills cmd's process.
func KillGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}
