package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// versionInfo is what `nas version --json` prints.
type versionInfo struct {
	Version   string `json:"version"`    // module version, "(devel)" from a checkout
	Commit    string `json:"commit"`     // VCS revision, "" when unknown
	Modified  bool   `json:"modified"`   // the work tree had changes
	GoVersion string `json:"go_version"` // toolchain that built the binary
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// buildVersion reads the binary's build information.
func buildVersion() versionInfo {
	v := versionInfo{Version: "(unknown)", GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one-line form of v.
func (v versionInfo) String() string {
	commit := v.Commit
	if commit == "" {
		commit = "unknown commit"
	}
	if v.Modified {
		commit += "-dirty"
	}
	return fmt.Sprintf("nas %s (%s) %s %s/%s", v.Version, commit, v.GoVersion, v.OS, v.Arch)
}

// newVersionCmd builds `nas version`.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version nas was built from",
		Args:  exactArgs(0),
		RunE:  func(cmd *cobra.Command, _ []string) error { return runVersion(cmd.Context()) },
	}
}

// runVersion prints the build information, as JSON with --json.
func runVersion(context.Context) error {
	v := buildVersion()
	if cf.json {
		return printJSON(v)
	}
	fmt.Println(v)
	return nil
}
