package layers_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// copyleft are the titles of licenses the Apache-2.0 binary must not link.
var copyleft = []string{"GNU AFFERO GENERAL PUBLIC LICENSE", "GNU GENERAL PUBLIC LICENSE"}

// TestNoCopyleftDependencies: no module linked into the nas binary carries
// a GPL or AGPL license file (read from the module cache).
func TestNoCopyleftDependencies(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}} {{.Dir}}{{end}}{{end}}", "./cmd/nas")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		mod, dir, _ := strings.Cut(sc.Text(), " ")
		if seen[mod] {
			continue
		}
		seen[mod] = true
		if dir == "" {
			t.Skipf("module %s is not in the module cache (go mod download it to check its license)", mod)
		}
		checkLicense(t, mod, dir)
	}
	if len(seen) == 0 {
		t.Fatal("go list found no dependencies")
	}
}

// checkLicense fails if the license files at the root of dir are GPL or
// AGPL, or if there is none.
func checkLicense(t *testing.T, mod, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("module %s: %v", mod, err)
	}
	found := false
	for _, e := range entries {
		name := strings.ToUpper(e.Name())
		if e.IsDir() || !(strings.HasPrefix(name, "LICENSE") || strings.HasPrefix(name, "LICENCE") || strings.HasPrefix(name, "COPYING")) {
			continue
		}
		found = true
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range copyleft {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("module %s: %s is the %s", mod, e.Name(), strings.ToLower(c))
			}
		}
	}
	if !found {
		t.Errorf("module %s has no LICENSE or COPYING file in %s", mod, dir)
	}
}
