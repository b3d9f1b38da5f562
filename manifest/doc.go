// Package manifest defines what a repository's history is made of: object
// entries, the content lists they point to, commits, and the kv-backed store
// for tree nodes, content lists and commits.
//
// Vocabulary:
//   - Entry: one object version as S3 sees it (size, ETag, headers, user
//     metadata, checksum, version ID, modification time) plus its content:
//     the chunk list, inline when short, else a content list stored by hash.
//   - Tree: the sorted map key -> encoded Entry of one commit, built by
//     package tree; two trees share every unchanged node.
//   - Commit: immutable; its ID is the hash of its canonical encoding (tree
//     root, parents, metadata), so equal history gives equal IDs.
//
// Encodings are canonical: every field is written as (uvarint tag, uvarint
// length, bytes) in ascending tag order, absent and zero fields omitted, and
// maps sorted, so the same value always gives the same bytes and hash.
// Unknown tags are skipped on decode, so fields can be added later.
//
// kv layout (all values immutable, keyed by their hash):
//
//	n/<32-byte hash>  tree node
//	l/<32-byte hash>  content list (chunk refs and part sizes)
//	m/<32-byte hash>  commit
package manifest
