// Package mcpserver is the gateway's Model Context Protocol face for
// agents: an *mcp.Server (the official Go SDK) whose tools call the
// gateway through package client with one lease's credentials, on that
// lease's repository and branch. Like the mount, it is a network client:
// every tool call is authorized, charged to the lease's budgets and
// recorded by the gateway, never here; this package holds no state but
// the client and the lease's target.
//
// Vocabulary:
//   - Options: the client (a lease's temporary credentials), the
//     repository and branch the lease is bound to.
//   - Tool: one of the specification's agent tools, named nas_*, with a
//     typed input and output struct whose JSON Schemas the SDK infers.
//   - Tool error: a call the gateway refused, answered as a tool result
//     with IsError set and a text that starts with the specification's
//     code (NotFound, AccessDenied, QuotaExceeded, ExpiredToken), so an
//     agent can tell "does not exist" from "not allowed" from "spent"
//     from "dead lease" and adapt instead of retrying.
//
// The tools of this slice are nas_list, nas_read, nas_write, nas_lease,
// nas_propose, nas_branch (checkpoints of the lease's branch, and forks
// of it with a child lease each), nas_search (search.go), nas_remember
// and nas_recall (memory.go). No operator tool (gate decisions,
// revocation, forgetting, policy) is ever registered: those change the
// guarantees that bind the caller.
//
// Paths are keys of the repository; one leading "/" names the
// repository's root, as in lease globs, and is dropped.
//
// Concurrency: a Server may serve many sessions at once; the tools share
// the client, which is safe for concurrent use.
package mcpserver
