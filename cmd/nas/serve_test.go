package main

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serveChild is `nas serve` running in a child process.
type serveChild struct {
	cmd   *exec.Cmd
	mu    sync.Mutex // guards lines
	lines []string   // stderr so far
	ready chan string
	eof   chan struct{} // closed when stderr is read to its end
}

// startServe starts `nas serve args...` on a fresh data directory and
// 127.0.0.1:0, and waits until it serves; ready is the line that says so.
func startServe(t *testing.T, env []string, args ...string) (*serveChild, string) {
	t.Helper()
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), env...), "NAS_CLI_ARGS="+strings.Join(args, "\x1f"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &serveChild{cmd: cmd, ready: make(chan string, 1), eof: make(chan struct{})}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go c.read(stderr)
	select {
	case line := <-c.ready:
		return c, line
	case <-time.After(30 * time.Second):
		t.Fatalf("nas serve did not start:\n%s", c.output())
	}
	return nil, ""
}

// read collects stderr, announcing the first line that says it serves.
func (c *serveChild) read(r io.Reader) {
	defer close(c.eof)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		c.mu.Lock()
		c.lines = append(c.lines, sc.Text())
		c.mu.Unlock()
		if strings.Contains(sc.Text(), "serving S3 and the control API") {
			select {
			case c.ready <- sc.Text():
			default:
			}
		}
	}
}

// output is what the child wrote to stderr so far.
func (c *serveChild) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// waitFor waits until stderr has a line containing s.
func (c *serveChild) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(c.output(), s) {
			return
		}
	}
	t.Fatalf("no line with %q in:\n%s", s, c.output())
}

// stop sends SIGTERM and requires exit status 0.
func (c *serveChild) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-c.eof // Wait closes the pipe: read it all first
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("nas serve after SIGTERM: %v\n%s", err, c.output())
	}
}

// TestServeJSONLogs: with --log-format json every line on stderr is a
// JSON object with time, level and msg, the banner included; SIGTERM
// ends the process with status 0.
func TestServeJSONLogs(t *testing.T) {
	c, line := startServe(t, nil, "--log-format", "json", "--log-level", "debug")
	var banner struct{ Endpoint string }
	if err := json.Unmarshal([]byte(line), &banner); err != nil || !strings.HasPrefix(banner.Endpoint, "http://127.0.0.1:") {
		t.Fatalf("banner %q: %v", line, err)
	}
	must(t, c.cmd.Process.Signal(syscall.SIGHUP))
	c.waitFor(t, "SIGHUP")
	c.stop(t)
	lines := strings.Split(c.output(), "\n")
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("log line %q has no %q", l, k)
			}
		}
	}
	if !strings.Contains(c.output(), "generated owner credentials") || len(lines) < 4 {
		t.Errorf("missing records in:\n%s", c.output())
	}
}

// TestServeHangupReloadsCertificate: SIGHUP does not end `nas serve`; it
// reloads the TLS certificate (new handshakes see the new one), keeps the
// old one when the files are bad, and SIGTERM still exits 0.
func TestServeHangupReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeCert(t, certFile, keyFile, 1)
	c, line := startServe(t, nil, "--tls-cert", certFile, "--tls-key", keyFile)
	addr := strings.Fields(strings.SplitAfter(line, "https://")[1])[0]
	if got := serial(t, addr); got != 1 {
		t.Fatalf("serial %d, want 1", got)
	}
	writeCert(t, certFile, keyFile, 2)
	must(t, c.cmd.Process.Signal(syscall.SIGHUP))
	c.waitFor(t, "reloaded the TLS certificate")
	if got := serial(t, addr); got != 2 {
		t.Fatalf("after SIGHUP: serial %d, want 2", got)
	}
	must(t, os.WriteFile(certFile, []byte("not a certificate"), 0o600))
	must(t, c.cmd.Process.Signal(syscall.SIGHUP))
	c.waitFor(t, "TLS certificate not reloaded")
	if got := serial(t, addr); got != 2 {
		t.Fatalf("after a bad SIGHUP: serial %d, want 2 (the old certificate)", got)
	}
	c.stop(t)
}

// serial is the serial number of the certificate the server at addr
// presents in a new handshake.
func serial(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// writeCert writes a self-signed certificate for 127.0.0.1 with the given
// serial number.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "nas test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))
	must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
}

// TestServeLogFileReopenedOnHangup: with --log-file the logs go to the
// file; after a rotator renames it, SIGHUP makes the gateway write a new
// file at the path, and the old one gets nothing more.
func TestServeLogFileReopenedOnHangup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nas.log")
	c, line := startServe(t, nil, "--log-file", path)
	endpoint := "http://" + strings.Fields(strings.SplitAfter(line, "http://")[1])[0]
	request := func() {
		t.Helper()
		resp, err := http.Get(endpoint + "/")
		must(t, err)
		resp.Body.Close()
	}
	waitFile := func(p, s string) string {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), s) {
				return string(b)
			}
		}
		b, _ := os.ReadFile(p)
		t.Fatalf("%s has no %q:\n%s", p, s, b)
		return ""
	}
	request()
	waitFile(path, "msg=access")
	must(t, os.Rename(path, path+".1"))
	must(t, c.cmd.Process.Signal(syscall.SIGHUP))
	waitFile(path, "reopened the log file")
	before, _ := os.ReadFile(path + ".1")
	request()
	waitFile(path, "msg=access")
	c.stop(t)
	if after, _ := os.ReadFile(path + ".1"); string(after) != string(before) {
		t.Fatalf("the rotated file was written after SIGHUP:\n%s", after[len(before):])
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("log file mode: %v %v", st, err)
	}
}

// TestServeLogFileKeepsSecretsOut: in JSON with --log-file, the banner is
// a record in the file, but the generated owner credentials are shown on
// stderr only.
func TestServeLogFileKeepsSecretsOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nas.log")
	args := []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-file", path, "--log-format", "json"}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NAS_ACCESS_KEY=", "NAS_SECRET_KEY=", "NAS_CLI_ARGS="+strings.Join(args, "\x1f"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var log string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if log = string(b); strings.Contains(log, "serving S3") {
			break
		}
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	cmd.Wait()
	if !strings.Contains(log, "serving S3") || strings.Contains(log, "secret_access_key") {
		t.Fatalf("log file:\n%s", log)
	}
	if !strings.Contains(stderr.String(), "secret_access_key") {
		t.Fatalf("credentials not on stderr:\n%s", stderr.String())
	}
}
