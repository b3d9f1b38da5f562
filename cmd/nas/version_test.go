package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `nas version`, `nas --version` and `nas version --json`
// report the build; the JSON is one object with exactly the snake_case
// fields of versionInfo.
func TestVersion(t *testing.T) {
	code, out := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "nas ") || !strings.Contains(out, runtime.Version()) || !strings.Contains(out, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("nas version: exit %d, %q", code, out)
	}
	if code, out2 := runCLI(t, "--version"); code != 0 || out2 != out {
		t.Errorf("nas --version: exit %d, %q; want %q", code, out2, out)
	}
	code, out = runCLI(t, "version", "--json")
	if code != 0 {
		t.Fatalf("nas version --json: exit %d", code)
	}
	var v versionInfo
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("nas version --json: %v\n%s", err, out)
	}
	var fields map[string]any
	json.Unmarshal([]byte(out), &fields)
	for _, k := range []string{"version", "commit", "modified", "go_version", "os", "arch"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("nas version --json has no %q: %s", k, out)
		}
	}
	if v.GoVersion != runtime.Version() || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH || v.Version == "" {
		t.Errorf("nas version --json = %+v", v)
	}
}
