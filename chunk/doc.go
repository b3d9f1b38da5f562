// Package chunk names chunks: the BLAKE3-256 Hash that is a chunk's only
// name, a Ref (a Hash and the chunk's length) and the largest size a chunk
// may have. It is a leaf package so that both sides of the gateway use the
// same names without either linking the other's storage: the chunk store
// (cas) on the gateway, and the mount's host-wide cache of verified chunks
// (chunkcache), which checks every chunk it keeps against its Hash.
package chunk
