package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// mcpLease starts a gateway with a repository holding docs/hello.md
// (text) and writes a lease file that may list and read docs/.
func mcpLease(t *testing.T, text string) string {
	t.Helper()
	_, owner := ownerCLI(t)
	for _, s := range [][]string{{"repo", "create", "mcpcli", "--unprotected"},
		{"role", "put", "agent", "--repo", "mcpcli", "--paths", "**", "--actions", "list,read,write,propose"}} {
		if code, out := runCLI(t, s...); code != 0 {
			t.Fatalf("nas %s: %d %s", strings.Join(s, " "), code, out)
		}
	}
	o := nasclient.Object{Repo: "mcpcli", Branch: "main", Key: "docs/hello.md"}
	if _, err := owner.Put(t.Context(), o, strings.NewReader(text), int64(len(text)), nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "commit", "mcpcli", "main", "-m", "seed"); code != 0 {
		t.Fatalf("commit: %s", out)
	}
	code, lj := runCLI(t, "lease", "create", "mcpcli", "--role", "agent", "--paths", "docs/**", "--actions", "list,read",
		"--fork-from", "main", "--ttl", "1h", "--json")
	if code != 0 {
		t.Fatalf("lease create: %s", lj)
	}
	lf := filepath.Join(t.TempDir(), "lease.json")
	must(t, os.WriteFile(lf, []byte(lj), 0o600))
	return lf
}

// mcpChild is `nas mcp --lease-json lf` as a command, with none of the
// owner's variables.
func mcpChild(lf string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "NAS_ACCESS_KEY=", "NAS_SECRET_KEY=", "NAS_ENDPOINT=",
		"NAS_CLI_ARGS="+strings.Join([]string{"mcp", "--lease-json", lf}, "\x1f"))
	return cmd
}

// TestMCPCommand drives `nas mcp --lease-json F` as an MCP host would:
// a child process on stdio, one nas_read through the lease.
func TestMCPCommand(t *testing.T) {
	text := "# Hello\n\nfrom the gateway\n"
	lf := mcpLease(t, text)
	cmd := mcpChild(lf)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to nas mcp: %v\n%s", err, &stderr)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nas_read", Arguments: map[string]any{"path": "docs/hello.md"}})
	if err != nil || res.IsError {
		t.Fatalf("nas_read: %v %+v\n%s", err, res, &stderr)
	}
	var rd apiv1.FileReadResponse
	b, _ := json.Marshal(res.StructuredContent)
	must(t, json.Unmarshal(b, &rd))
	if rd.Content != text || rd.View != apiv1.ViewFull {
		t.Fatalf("nas_read answered %+v", rd)
	}
	// Closing stdin ends the server cleanly.
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v\n%s", err, &stderr)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Fatalf("nas mcp did not exit 0 after stdin closed: %v\n%s", cmd.ProcessState, &stderr)
	}
}

// TestMCPSignal: SIGTERM ends `nas mcp` with exit 0, and what it logs
// goes to standard error, never to the protocol's standard output.
func TestMCPSignal(t *testing.T) {
	cmd := mcpChild(mcpLease(t, "hello\n"))
	stdin, err := cmd.StdinPipe()
	must(t, err)
	defer stdin.Close()
	var stdout bytes.Buffer
	stderr := &syncBuffer{b: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stderr.String(), "serving MCP") {
		if time.Now().After(deadline) {
			t.Fatalf("nas mcp did not start: %s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("nas mcp after SIGTERM: %v\n%s", err, stderr)
	}
	if stdout.Len() != 0 {
		t.Fatalf("nas mcp wrote %q to standard output without a request", stdout.String())
	}
}

// syncBuffer is a buffer a child's output is copied into while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  *bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMCPRefusesOwnerKeys: the owner's keys are a usage error (exit 2)
// that says why.
func TestMCPRefusesOwnerKeys(t *testing.T) {
	ownerCLI(t)
	code, msg := runCLIStderr(t, "mcp")
	if code != exitUsage || !strings.Contains(msg, "temporary credentials") {
		t.Fatalf("nas mcp with the owner's keys: exit %d (want %d), %q", code, exitUsage, msg)
	}
}
