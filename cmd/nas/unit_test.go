package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit checks contrib/systemd/nas.service with `systemd-analyze
// verify`, which also requires ExecStart's binary to exist: the copy it
// checks runs this test binary in place of /usr/local/bin/nas. Any warning
// (an unknown key, a bad value) fails the test.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("../../contrib/systemd/nas.service")
	if err != nil {
		t.Fatal(err)
	}
	const exec0 = "ExecStart=/usr/local/bin/nas serve --config /etc/nas/nas.yaml\n"
	if !strings.Contains(string(unit), exec0) {
		t.Fatalf("nas.service has no %q", exec0)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd)")
	}
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "nas.service")
	must(t, os.WriteFile(copied, []byte(strings.Replace(string(unit), "ExecStart=/usr/local/bin/nas", "ExecStart="+self, 1)), 0o644))
	out, err := exec.Command(analyze, "verify", copied).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify nas.service: %v\n%s", err, out)
	}
}

// TestExampleConfig: the example config next to the unit sets only known
// flags, with valid values.
func TestExampleConfig(t *testing.T) {
	fs, err := resolved(t, nil, "--config", "../../contrib/systemd/nas.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.Lookup("data").Value.String(); got != "/var/lib/nas" {
		t.Errorf("example data = %q, want /var/lib/nas (the unit's ReadWritePaths)", got)
	}
}
