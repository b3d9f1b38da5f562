package program

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAllow: only a regular, executable file inside the folder, reached
// by any path whose links resolve inside it.
func TestAllow(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	write := func(dir, name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write(dir, "ok.sh", 0o755)
	plain := write(dir, "plain.txt", 0o644)
	outside := write(out, "out.sh", 0o755)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	in, escape := link("in", ok), link("escape", outside)
	for _, tc := range []struct {
		path string
		want string // the real path, "" for a refusal
	}{
		{ok, ok},
		{in, ok},
		{filepath.Join(dir, "sub", "..", "ok.sh"), ok},
		{plain, ""},
		{outside, ""},
		{escape, ""},
		{filepath.Join(dir, "..", filepath.Base(out), "out.sh"), ""},
		{filepath.Join(dir, "sub"), ""},
		{dir, ""},
		{filepath.Join(dir, "missing"), ""},
	} {
		real, err := Allow(dir, tc.path)
		wantReal, _ := filepath.EvalSymlinks(tc.want)
		if tc.want == "" && (err == nil || !errors.Is(err, ErrRefused)) || tc.want != "" && (err != nil || real != wantReal) {
			t.Errorf("Allow(%s): %q %v, want %q", tc.path, real, err, tc.want)
		}
	}
}

// TestEnv: the gateway's credentials never reach a program.
func TestEnv(t *testing.T) {
	t.Setenv("NAS_SECRET_KEY", "s")
	t.Setenv("aws_secret_access_key", "s")
	t.Setenv("KEEP_ME", "1")
	env := Env()
	if !slices.Contains(env, "KEEP_ME=1") {
		t.Error("an ordinary variable was dropped")
	}
	for _, kv := range env {
		if u := strings.ToUpper(kv); strings.HasPrefix(u, "NAS_") || strings.HasPrefix(u, "AWS_") {
			t.Errorf("%s reaches a program", kv)
		}
	}
}
