package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentnas/nas/nastest"
)

// runCLI runs the nas command with args and returns its exit code and
// standard output.
func runCLI(t *testing.T, args ...string) (int, string) {
	t.Helper()
	r, w, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = w
	cf = clientFlags{} // flags are package state; each run starts clean
	code := run(args)
	w.Close()
	os.Stdout = stdout
	var buf bytes.Buffer
	io.Copy(&buf, r)
	return code, buf.String()
}

func TestCLI(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)

	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"repo", "create", "cli", "--unprotected"}, 0, "created repository cli"},
		{[]string{"repo", "create", "cli"}, 1, ""},
		{[]string{"branch", "create", "cli"}, 2, ""},                // missing NAME
		{[]string{"branch", "create", "cli", "x", "--nope"}, 2, ""}, // unknown flag
		{[]string{"frobnicate"}, 2, ""},
		{[]string{"branch", "create", "cli", "exp/one"}, 0, "created branch exp/one"},
		{[]string{"branch", "list", "cli"}, 0, "exp/one"},
		{[]string{"branch", "protect", "cli", "exp/one"}, 0, "protected"},
		{[]string{"commit", "cli", "exp/one", "-m", "nope", "--allow-empty"}, 1, ""},
		{[]string{"branch", "unprotect", "cli", "exp/one"}, 0, "unprotected"},
		{[]string{"commit", "cli", "exp/one", "-m", "empty", "--allow-empty"}, 0, "committed"},
		{[]string{"log", "cli", "exp/one", "-n", "1"}, 0, "empty"},
		{[]string{"diff", "cli", "main", "exp/one"}, 0, ""},
		{[]string{"changes", "cli", "exp/one", "--json"}, 0, ""},
		{[]string{"branch", "list", "cli", "--json"}, 0, `"protected": false`},
		{[]string{"fsck"}, 0, "1 repositories"},
		{[]string{"branch", "delete", "cli", "exp/one"}, 0, "deleted branch exp/one"},
		{[]string{"branch", "delete", "cli", "exp/one"}, 1, ""},
	}
	for _, s := range steps {
		code, out := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("nas %s: exit %d, output %q; want exit %d containing %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
}

// TestRoleTrustFlags: `nas role put --oidc-*` stores the trust, a static
// key set as public keys only; bad flags are usage errors.
func TestRoleTrustFlags(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	if code, _ := runCLI(t, "repo", "create", "wid", "--unprotected"); code != 0 {
		t.Fatal("repo create")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeJWKS := func(name string, k any) string {
		b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: k, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	pub, priv := writeJWKS("pub.json", &key.PublicKey), writeJWKS("priv.json", key)
	base := []string{"role", "put", "ci", "--repo", "wid", "--paths", "**", "--actions", "list,read"}
	for _, s := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--oidc-issuer", "https://token.actions.githubusercontent.com", "--oidc-audience", "sts.amazonaws.com",
			"--oidc-subject", "repo:org/repo:*", "--oidc-claim", "repository=org/repo", "--json"}, 0, `"subject": "repo:org/repo:*"`},
		{[]string{"--oidc-issuer", "https://k8s.example", "--oidc-jwks", pub, "--oidc-audience", "nas", "--oidc-subject", "system:serviceaccount:etl:*", "--json"}, 0, `"kid": "k1"`},
		{[]string{"--oidc-issuer", "https://k8s.example", "--oidc-jwks", priv, "--oidc-audience", "nas", "--oidc-subject", "x"}, 1, ""}, // a private key is refused
		{[]string{"--oidc-issuer", "http://example.com", "--oidc-audience", "nas", "--oidc-subject", "x"}, 1, ""},                       // https only
		{[]string{"--oidc-issuer", "https://x.example", "--oidc-audience", "nas"}, 1, ""},                                               // names no subject
		{[]string{"--oidc-audience", "nas"}, 2, ""},
		{[]string{"--oidc-issuer", "https://x.example", "--oidc-audience", "nas", "--oidc-claim", "nokey"}, 2, ""},
	} {
		code, out := runCLI(t, append(base, s.args...)...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("nas role put %s: exit %d, output %q; want exit %d containing %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
		if strings.Contains(out, `"d":`) {
			t.Errorf("a private key part was stored: %s", out)
		}
	}
}
