// Package adaptertest speaks the adapter protocol to a real adapter
// program, for the tests of the adapters that ship with the gateway.
// Nothing in the product links it.
package adaptertest

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/adapter"
)

// Build builds the command in the current folder as name in a temporary
// folder; done removes it.
func Build(name string) (path string, done func(), out []byte, err error) {
	dir, err := os.MkdirTemp("", name+"-test-")
	if err != nil {
		return "", nil, nil, err
	}
	path = filepath.Join(dir, name)
	out, err = exec.Command("go", "build", "-o", path, ".").CombinedOutput()
	return path, func() { os.RemoveAll(dir) }, out, err
}

// Client is a running adapter and the test speaking to it.
type Client struct {
	T      *testing.T
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *syncBuffer
}

// Start runs program with args, greets it and checks that it names
// itself name; t.Cleanup ends it and fails t if it did not exit cleanly.
func Start(t *testing.T, program, name string, args ...string) *Client {
	t.Helper()
	cmd := exec.Command(program, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{T: t, in: in, out: bufio.NewReader(out), stderr: new(syncBuffer)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("adapter exited: %v\n%s", err, c.stderr)
		}
	})
	if res := c.Call(adapter.Request{Op: adapter.OpHello, Protocol: adapter.Protocol}); res.Protocol != adapter.Protocol || res.Name != name {
		t.Fatalf("hello: %+v\n%s", res, c.stderr)
	}
	return c
}

// Stderr is what the adapter wrote to stderr so far.
func (c *Client) Stderr() string { return c.stderr.String() }

// Logged waits (up to 2 s) for the adapter to have written s to stderr:
// exec copies it on a goroutine of its own, after an answer may have
// arrived.
func (c *Client) Logged(s string) bool {
	for range 100 {
		if strings.Contains(c.stderr.String(), s) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// Call sends req and returns the answer's line.
func (c *Client) Call(req adapter.Request) adapter.Response {
	c.T.Helper()
	b, _ := json.Marshal(req)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.T.Fatalf("send %s: %v", b, err)
	}
	l, err := c.out.ReadBytes('\n')
	if err != nil {
		c.T.Fatalf("answer to %s: %v\n%s", b, err, c.stderr)
	}
	var res adapter.Response
	if err := json.Unmarshal(l, &res); err != nil {
		c.T.Fatalf("answer %q: %v", l, err)
	}
	return res
}

// Read reads [off, off+n) of key at version: the bytes, or the error
// code.
func (c *Client) Read(key, version string, off, n int64) ([]byte, string) {
	c.T.Helper()
	res := c.Call(adapter.Request{Op: adapter.OpRead, Key: key, Version: version, Offset: off, Length: n})
	if res.Error != nil {
		return nil, res.Error.Code
	}
	if res.Version != version {
		c.T.Fatalf("read of %s: version %q, asked %q", key, res.Version, version)
	}
	b := make([]byte, res.Length)
	if _, err := io.ReadFull(c.out, b); err != nil {
		c.T.Fatalf("read of %s: %v", key, err)
	}
	return b, ""
}

// syncBuffer is a buffer the adapter's stderr copier and a test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
