package main

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestLeaseCreateMCPToken: --mcp-token prints the URL and token once
// (and in --json), and an MCP host reaches the tools over HTTP with it.
func TestLeaseCreateMCPToken(t *testing.T) {
	text := "# Hello\n\nover HTTP\n"
	mcpLease(t, text) // the gateway, repository and role
	endpoint := os.Getenv("NAS_ENDPOINT")
	args := []string{"lease", "create", "mcpcli", "--role", "agent", "--paths", "docs/**", "--actions", "list,read", "--mcp-token"}
	code, out := runCLI(t, args...)
	line := regexp.MustCompile(`(?m)^mcp (\S+) · Authorization: Bearer (nasmcp_\S+) `).FindStringSubmatch(out)
	if code != 0 || line == nil || line[1] != endpoint+"/_nas/mcp" {
		t.Fatalf("lease create --mcp-token: %d %q", code, out)
	}
	code, lj := runCLI(t, append(args, "--json")...)
	var lf struct {
		apiv1.Lease
		Endpoint string `json:"endpoint"`
	}
	if err := json.Unmarshal([]byte(lj), &lf); code != 0 || err != nil || !strings.HasPrefix(lf.MCPToken, "nasmcp_") || lf.MCPToken == line[2] {
		t.Fatalf("lease create --mcp-token --json: %d %v %s", code, err, lj)
	}
	if code, show := runCLI(t, "lease", "show", lf.ID); code != 0 || strings.Contains(show, lf.MCPToken) || strings.Contains(show, "mcp_token") {
		t.Fatalf("lease show: %d %s", code, show)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: line[1], HTTPClient: &http.Client{Transport: bearerTransport{line[2]}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nas_read", Arguments: map[string]any{"path": "docs/hello.md"}})
	if err != nil || res.IsError {
		t.Fatalf("nas_read over HTTP: %v %+v", err, res)
	}
	var rd apiv1.FileReadResponse
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &rd); err != nil || rd.Content != text {
		t.Fatalf("read %q (%v)", rd.Content, err)
	}
}
