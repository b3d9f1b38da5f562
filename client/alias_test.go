package client

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clearCredentialEnv empties every variable Resolve reads and points the
// AWS shared files and the alias file into dir.
func clearCredentialEnv(t *testing.T, dir string) {
	t.Helper()
	for _, k := range []string{"NAS_ENDPOINT", "NAS_ACCESS_KEY", "NAS_SECRET_KEY", "NAS_SESSION_TOKEN", "NAS_ALIAS",
		"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "aws-credentials"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "aws-config"))
	t.Setenv("NAS_CONFIG_DIR", filepath.Join(dir, "nas"))
}

func TestAliasFile(t *testing.T) {
	dir := t.TempDir()
	clearCredentialEnv(t, dir)
	path, err := AliasPath()
	if err != nil || path != filepath.Join(dir, "nas", "aliases.json") {
		t.Fatalf("AliasPath = %q, %v", path, err)
	}
	if m, err := LoadAliases(path); err != nil || len(m) != 0 {
		t.Fatalf("no file: %v %v", m, err)
	}
	for _, bad := range []Alias{{Name: "", URL: "u", AccessKey: "a", SecretKey: "s"}, {Name: "../x", URL: "u", AccessKey: "a", SecretKey: "s"},
		{Name: "ok", URL: "u", AccessKey: "a"}, {Name: strings.Repeat("a", 65), URL: "u", AccessKey: "a", SecretKey: "s"}} {
		if err := SaveAlias(path, bad); err == nil {
			t.Errorf("SaveAlias(%+v) accepted", bad)
		}
	}
	if err := SaveAlias(path, Alias{Name: "lab", URL: "http://lab:9000", AccessKey: "LABKEY", SecretKey: "labsecret"}); err != nil {
		t.Fatal(err)
	}
	if err := SaveAlias(path, Alias{Name: "ci", URL: "https://ci", AccessKey: "CIKEY", SecretKey: "cisecret"}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", p, st.Mode().Perm(), want, err)
		}
	}
	m, err := LoadAliases(path)
	if err != nil || len(m) != 2 || m["lab"].SecretKey != "labsecret" || strings.Join(AliasNames(m), ",") != "ci,lab" {
		t.Fatalf("after two saves: %v %v", m, err)
	}
	if err := RemoveAlias(path, "ci"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveAlias(path, "ci"); !errors.Is(err, ErrNoAlias) {
		t.Fatalf("remove twice: %v", err)
	}
	if _, err := LookupAlias(path, "ci"); !errors.Is(err, ErrNoAlias) {
		t.Fatalf("removed alias found: %v", err)
	}
	// A file others can read is refused: its secrets may not be ours.
	os.Chmod(path, 0o644)
	if _, err := LoadAliases(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable alias file: %v", err)
	}
	os.Chmod(path, 0o600)
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := LookupAlias(path, "lab"); err == nil {
		t.Fatal("a broken alias file was read")
	}
}

func TestResolveAliasAndProfile(t *testing.T) {
	dir := t.TempDir()
	clearCredentialEnv(t, dir)
	path, _ := AliasPath()
	if err := SaveAlias(path, Alias{Name: "lab", URL: "http://lab:9000", AccessKey: "LABKEY", SecretKey: "labsecret", SessionToken: "labtok"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "aws-credentials"), []byte("[default]\naws_access_key_id = DEFKEY\naws_secret_access_key = defsecret\n\n"+
		"[work]\naws_access_key_id = WORKKEY\naws_secret_access_key = worksecret\naws_session_token = worktok\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "aws-config"), []byte("[profile work]\nendpoint_url = http://work:9000\n\n[profile sso]\nsso_start_url = https://x\n"), 0o600)
	data := t.TempDir()
	os.WriteFile(filepath.Join(data, "credentials"), []byte(`{"access_key":"DATAKEY","secret_key":"datasecret"}`), 0o600)

	check := func(name string, s Source, ak, tok, ep string) {
		t.Helper()
		cfg, _, err := Resolve(s)
		if err != nil || cfg.Credentials.AccessKeyID != ak || cfg.Credentials.SessionToken != tok || cfg.Endpoint != ep {
			t.Errorf("%s: %+v %v; want %s/%s at %s", name, cfg.Credentials, err, ak, tok, ep)
		}
	}
	nodata := t.TempDir()
	// Lowest rank: the default profile, then AWS_PROFILE's.
	check("default profile", Source{DataDir: nodata}, "DEFKEY", "", DefaultEndpoint)
	t.Setenv("AWS_PROFILE", "work")
	check("AWS_PROFILE", Source{DataDir: nodata}, "WORKKEY", "worktok", "http://work:9000")
	// The gateway's own data directory and AWS_* rank above AWS_PROFILE.
	check("data dir over AWS_PROFILE", Source{DataDir: data}, "DATAKEY", "", DefaultEndpoint)
	t.Setenv("AWS_ACCESS_KEY_ID", "ENVKEY")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	check("AWS_* over AWS_PROFILE", Source{DataDir: nodata}, "ENVKEY", "", DefaultEndpoint)
	t.Setenv("NAS_ACCESS_KEY", "NASKEY")
	t.Setenv("NAS_SECRET_KEY", "nassecret")
	check("NAS_*", Source{DataDir: data}, "NASKEY", "", DefaultEndpoint)
	// Named on the command line: --profile, then --alias, beat NAS_*.
	check("--profile", Source{Profile: "work", DataDir: data}, "WORKKEY", "worktok", "http://work:9000")
	check("--alias", Source{Alias: "lab", DataDir: data}, "LABKEY", "labtok", "http://lab:9000")
	check("--alias with --endpoint", Source{Alias: "lab", Endpoint: "http://other:1"}, "LABKEY", "labtok", "http://other:1")
	t.Setenv("NAS_ALIAS", "lab")
	check("NAS_ALIAS", Source{DataDir: data}, "LABKEY", "labtok", "http://lab:9000")
	check("--profile beside NAS_ALIAS", Source{Profile: "work"}, "WORKKEY", "worktok", "http://work:9000")
	check("flags", Source{AccessKey: "FLAGKEY", SecretKey: "flagsecret"}, "FLAGKEY", "", DefaultEndpoint)

	for name, s := range map[string]Source{
		"two sources":     {Alias: "lab", Profile: "work"},
		"keys and alias":  {AccessKey: "K", SecretKey: "S", Alias: "lab"},
		"missing alias":   {Alias: "nope"},
		"missing profile": {Profile: "nope"},
		"profile w/o key": {Profile: "sso"},
	} {
		if _, _, err := Resolve(s); err == nil {
			t.Errorf("%s: resolved", name)
		}
	}
	if _, _, err := Resolve(Source{Profile: "nope"}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("missing profile: %v", err)
	}
	if _, _, err := Resolve(Source{Alias: "lab", Profile: "work"}); !errors.Is(err, ErrTwoSources) {
		t.Errorf("two sources: %v", err)
	}
}
