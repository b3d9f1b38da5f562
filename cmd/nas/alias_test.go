package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/nastest"
)

// TestAliasCommands: an alias saved with `nas alias set` reaches the
// gateway with --alias and NAS_ALIAS, above the NAS_* variables; list
// never shows a secret; the file is 0600.
func TestAliasCommands(t *testing.T) {
	srv := nastest.Start(t)
	dir := t.TempDir()
	t.Setenv("NAS_CONFIG_DIR", dir)
	t.Setenv("NAS_ALIAS", "")
	// The shell's NAS_* point elsewhere; the alias must win when named.
	t.Setenv("NAS_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("NAS_ACCESS_KEY", "WRONG")
	t.Setenv("NAS_SECRET_KEY", "wrong")

	if code, _ := runCLI(t, "alias", "set", "lab", "ftp://x", "--access-key", "K", "--secret-key", "S"); code != exitUsage {
		t.Fatalf("bad URL: exit %d", code)
	}
	if code, _ := runCLI(t, "alias", "set", "lab", srv.Endpoint, "--secret-key", "S"); code != exitUsage {
		t.Fatalf("no access key: exit %d", code)
	}
	var set aliasView
	jsonStep(t, exitOK, &set, "alias", "set", "lab", srv.Endpoint+"/", "--access-key", nastest.AccessKey, "--secret-key", nastest.SecretKey)
	if set.URL != srv.Endpoint || set.AccessKey != nastest.AccessKey {
		t.Fatalf("alias set: %+v", set)
	}
	if st, err := os.Stat(filepath.Join(dir, "aliases.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("alias file: %v %v", st, err)
	}
	var list aliasListResponse
	jsonStep(t, exitOK, &list, "alias", "list")
	if _, out := runCLI(t, "alias", "list"); len(list.Aliases) != 1 || strings.Contains(out, nastest.SecretKey) {
		t.Fatalf("alias list: %+v %q", list, out)
	}
	if code, out := runCLI(t, "--alias", "lab", "repo", "create", "aliased", "--unprotected"); code != exitOK {
		t.Fatalf("--alias: exit %d %q", code, out)
	}
	t.Setenv("NAS_ALIAS", "lab")
	if code, out := runCLI(t, "repo", "list"); code != exitOK || !strings.Contains(out, "aliased") {
		t.Fatalf("NAS_ALIAS: exit %d %q", code, out)
	}
	if code, _ := runCLI(t, "--alias", "lab", "--profile", "x", "repo", "list"); code != exitUsage {
		t.Fatalf("two sources: exit %d", code)
	}
	if code, _ := runCLI(t, "--alias", "nope", "repo", "list"); code != exitFailure {
		t.Fatalf("unknown alias: exit %d", code)
	}
	if code, _ := runCLI(t, "alias", "remove", "lab"); code != exitOK {
		t.Fatalf("alias remove: exit %d", code)
	}
	if code, _ := runCLI(t, "alias", "remove", "lab"); code != exitFailure {
		t.Fatalf("alias remove twice: exit %d", code)
	}
}
