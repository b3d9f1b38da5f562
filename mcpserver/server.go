package mcpserver

import (
	"cmp"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/client"
)

// Options say whom the server acts as and where.
type Options struct {
	// Client calls the gateway; it should hold a lease's temporary
	// credentials (the owner's keys would make every tool an owner's).
	Client *client.Client
	// Repo and Branch are the lease's repository and branch: reads,
	// listings and writes go there.
	Repo, Branch string
	// Version is reported to MCP hosts (default "(devel)").
	Version string
	// Log receives the SDK's logs; nil discards them. It must never
	// write to the transport's stream (stdout for stdio).
	Log *slog.Logger
}

// New returns a server with the tools of this slice registered (see the
// package doc). It starts nothing: run it with Server.Run on a
// transport.
func New(o Options) (*mcp.Server, error) {
	if o.Client == nil || o.Repo == "" || o.Branch == "" {
		return nil, ErrNoTarget
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "nas", Title: "Agent NAS", Version: cmp.Or(o.Version, "(devel)")},
		&mcp.ServerOptions{Logger: o.Log, Instructions: instructions(o), Capabilities: &mcp.ServerCapabilities{}})
	t := &tools{c: o.Client, repo: o.Repo, branch: o.Branch}
	t.register(s)
	return s, nil
}

// instructions tell the host's model what the server is bound to.
func instructions(o Options) string {
	return "Files of repository " + o.Repo + ", branch " + o.Branch + ", as one lease allows: " +
		"paths outside the lease do not exist (NotFound). Writes land on the branch and are committed; " +
		"nas_propose offers them for merging. Read large files with nas_read and a small budget_tokens first."
}

// key is the repository key a tool's path names: one leading "/" is the
// root, as in lease globs.
func key(path string) string { return strings.TrimPrefix(path, "/") }
