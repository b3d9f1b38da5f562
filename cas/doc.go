// Package cas is the content-addressed chunk store.
//
// Vocabulary:
//   - chunk.Hash: the BLAKE3-256 digest of a chunk's bytes, and its only
//     name; chunk.Ref: a Hash plus the chunk's length (an object's content
//     is a list of Refs). Both live in the leaf package chunk, which the
//     mount's cache shares without linking this store.
//   - Store: where chunks live. Small chunks (at most InlineMax bytes) are
//     kept inside their index record in kv, so a small PUT costs one
//     group-committed kv transaction. Larger chunks are appended to segment
//     files: every Upload writes its new chunks into one segment of its own
//     and syncs it once, which keeps large PUTs near the disk's sequential
//     bandwidth (one file and one fsync per upload, as a plain file server
//     would do) while still deduplicating per chunk.
//   - Index record: one kv record per chunk (see kv layout below): where
//     the chunk is (inline bytes or segment, offset, length) and when it
//     was written.
//   - Upload: one write session (a PUT body, a part). It chunks a stream with
//     content-defined chunking (FastCDC, 256 KiB min, 1 MiB normal, 4 MiB
//     max), so an edited large object shares most chunks with its previous
//     version, and skips chunks the store already holds.
//
// Durability order: an Upload's segment is written (on Linux the kernel is
// asked every 8 MiB to start writing it out, so the disk works while the
// upload is still hashed; only a hint), fsynced and its directory fsynced
// in Sync; its index records are then written by Record
// inside the caller's kv transaction, together with the manifest entry that
// references them, so a chunk is durable before anything can point at it and
// a crash leaves at worst an unreferenced segment that garbage collection
// removes.
//
// Garbage collection and in-flight uploads: every Hash an Upload references
// (new or found already present) is pinned until the Upload is closed; while
// a collection cycle runs, released pins are remembered as live for the rest
// of the cycle. Sweep never deletes a pinned or remembered chunk, nor one
// whose record is newer than the cycle's start, so a PUT that deduplicates
// against a chunk can never lose it to a concurrent sweep.
//
// Reads: ReadRefs serves a range of an object's chunk list (a GET body).
// Every whole chunk is read into a pooled buffer and hashed to its name
// before any of its bytes are written, while a second goroutine already
// reads and verifies the next chunk (at most two chunk buffers per read);
// pieces at a range's ends are not verified, and Read streams one chunk
// and verifies it after writing it.
//
// Concurrency: Store is safe for concurrent use; an Upload belongs to one
// goroutine.
//
// kv layout:
//
//	c/<32-byte hash>  index record: inline bytes, or segment, offset and
//	                  length; write time
package cas
