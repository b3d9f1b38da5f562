package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/nastest"
)

// TestServeProfiles: --pprof-addr serves Go's profiles on loopback, on a
// port of their own (the gateway's port has none), and refuses any other
// address.
func TestServeProfiles(t *testing.T) {
	if code, _ := runCLI(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--pprof-addr", "0.0.0.0:6060"); code != 2 {
		t.Fatalf("--pprof-addr on every interface: exit %d, want the usage error 2", code)
	}
	addr, paddr := freeAddr(t), freeAddr(t)
	env := []string{"NAS_ACCESS_KEY=" + nastest.AccessKey, "NAS_SECRET_KEY=" + nastest.SecretKey}
	cmd, out := nasChild(t, env, "serve", "--addr", addr, "--data", filepath.Join(t.TempDir(), "d"), "--pprof-addr", paddr)
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	waitReady(t, &clusterGateway{addr: addr, out: out})
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get("http://" + paddr + "/debug/pprof/heap?debug=1")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				body = string(b)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heap profile on %s: %v\n%s", paddr, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(body, "heap profile") {
		t.Fatalf("heap profile: %.200s", body)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatal("the gateway's own port serves profiles")
	}
}
