// Package gitexport writes a repository with its whole history as a Git
// repository and reads one back with the same tree roots and commit IDs
// (spec L0.4).
//
// Vocabulary:
//   - Export: a bare Git repository with one Git commit per nas commit
//     (provenance in trailers), the objects' bytes at escaped paths and
//     .nas/ metadata for what Git cannot hold (see README-section.md and
//     the .nas/README every export carries).
//   - Escaping: EncodeSegment/DecodeSegment, a reversible, context-free
//     mapping from key segments to path names Git accepts (escape.go).
//   - Dump stream: the format between gateway and client (stream.go). The
//     gateway writes it (Dump) and reads it (Load); the client turns it
//     into Git (WriteGit) and Git into it (ReadGit). Client runs both
//     halves against a gateway's control API through package client.
//
// Invariants:
//   - Load publishes a repository only after every chunk, content list,
//     entry size, tree root and commit ID of the stream verified; on any
//     error nothing is visible.
//   - ReadGit accepts a Git commit, .nas file or metadata line only if it
//     is byte for byte what WriteGit writes for the values it carries.
//   - Both directions are O(changes) per commit: unchanged subtrees are
//     skipped by hash (prolly-tree hashes on the gateway, Git tree hashes
//     on the client).
//   - Memory is bounded by one chunk (4 MiB) and the directories along the
//     path being written; blobs stream.
//
// Concurrency: the functions are safe to run concurrently with each other
// and with the gateway's other work; garbage collection waits for a
// running Dump or Load. A Client is safe for concurrent use.
package gitexport
