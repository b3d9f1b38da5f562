// Package source attaches data that lives outside the gateway (a remote S3
// bucket, a folder on the gateway's host) to a repository without copying
// it, and materialises its objects on first read.
//
// Vocabulary:
//   - Source: a read-only tree of objects outside the gateway, behind a
//     three-method interface (List, Stat, ReadRange). S3 (aws-sdk-go-v2,
//     its own endpoint, region and credentials), Dir (a local folder
//     opened through os.Root) and Git (the tree of one revision of a
//     local repository, through go-git) are the implementations; others
//     (an HTTP API) can be added without touching branches or the chunk
//     store.
//   - Attachment: a Source bound to a prefix of a repository's branch,
//     recorded by the Registry. Attaching lists the source and imports
//     one lazy entry per object (branch.ImportWith, in pages, one commit
//     per page); no object bytes move. Refresh lists again and commits what
//     changed, so `nas diff` shows the remote's drift.
//   - Pin: the remote version a lazy entry stands for (manifest.Remote):
//     source ID, key, ETag and, where the remote keeps versions, version
//     ID. Every remote read names the pin (If-Match with the pinned ETag,
//     versionId when pinned) and checks the answer's ETag, so bytes of two
//     remote versions are never stitched together.
//   - Block: the unit of materialisation, BlockSize bytes of an object (the
//     last one shorter; an object up to BlockSize is one block). A range
//     read fetches only the blocks it touches.
//   - Side index: which blocks of which pinned objects are local, and their
//     chunks. It is an evictable cache beside the immutable trees, shared
//     by every branch, fork and repository, and a garbage-collection root
//     (Materializer implements branch.RootSource).
//   - Prefetch: a job of the Registry that makes a source's lazy
//     entries on its branch (under a prefix) local ahead of their reads,
//     with N workers and a byte rate over all of them. Each entry is
//     filled as a first read of the whole of it would be, except that
//     blocks the side index holds are skipped unread, so a job that
//     stopped (cancelled, failed, interrupted by a restart) resumes by
//     running again and fetches nothing twice. Drift and single
//     unavailable objects are counted (the first keys named); outageRun
//     unavailable entries in a row stop it. Its progress is kept in the
//     attachment record (Info.Prefetch). Status counts what is local
//     with one side-index range scan per entry.
//
// Reading (Materializer): a read of [off, off+n) loads the side-index
// records of its blocks with one range scan, streams the local ones from
// the chunk store, and fetches each run of missing blocks with one remote
// GET (at most MaxRun blocks, 1 GiB by default; a whole object within that
// is one plain GET, so the remote's whole-object checksum applies). The
// fetched bytes are chunked into the chunk store (one segment and one
// fsync per 16 blocks) while they stream to the reader, and recorded once
// the whole GET verified. Open starts the first fetch before the response
// status is written, so drift, a detached source or a dead remote are
// clean S3 errors; later failures abort the response.
//
// Invariants:
//   - The remote is written only by an owner's push (push.go), each write
//     conditional on the pinned version. Writes, copies and deletes on a
//     branch are ordinary branch changes over the pinned entries.
//   - Nothing is recorded in the side index before it is verified: the
//     bytes' length and, for a whole-object fetch, the checksum the remote
//     offers (a full-object x-amz-checksum-*, or the MD5 a single-part,
//     unencrypted ETag is; a multipart ETag is not an MD5 of the content).
//     Chunks are durable (cas Upload.Sync) before the index records that
//     reference them, written in the same transaction as the chunks' own
//     index records. A broken transfer leaves nothing recorded (the
//     upload's segment is deleted).
//   - A reader never receives a complete body before the fetch verified:
//     the last byte of its range is held back until then, and a failure
//     after the first byte returns an error, so the S3 edge aborts the
//     response rather than end it short.
//   - A body that breaks off is resumed with a ranged GET (still If-Match
//     the pin) within the retry budget; its checks span the whole stream.
//   - Credentials of a source are kept by the registry and never returned
//     by any of its methods (Info has none).
//
// Remote failures are typed (errors.go): ErrChanged (the pinned version is
// gone: drift), ErrThrottled and ErrUnavailable (after bounded retries with
// backoff), ErrCorrupt (bytes failed verification), ErrRemoved (the source
// was detached). The S3 edge answers 409 RemoteObjectChanged /
// RemoteSourceRemoved, 503 SlowDown and 503 ServiceUnavailable.
//
// kv layout:
//
//	SRC/<id>                                   attachment record (JSON,
//	                                           credentials included)
//	MI/<len id><id><len key><key><len pin><pin><4-byte block>
//	                                           side index: the block's
//	                                           chunk list (manifest.Content
//	                                           encoding), ~35 bytes a chunk;
//	                                           block 2^32-1 is the object's
//	                                           metadata, asked at its first
//	                                           HEAD or GET (meta.go)
//
// where each <len x> is a uvarint and pin is the ETag, plus "\x00" and the
// version ID when pinned. Keys of one pinned object are contiguous, in
// block order, so a read loads its blocks with one range scan.
//
// Concurrency: Registry and Materializer are safe for concurrent use.
// Concurrent first readers of a block share one remote fetch: the first
// claims the run of blocks (a flight), the others wait for it and then
// read locally; if its reader went away they lead a fetch themselves, and
// if the remote failed they get the same error (a reader of a block a
// prefetch is fetching so waits for it, rate limit included). Attach and
// refresh jobs run in Registry.Run, one at a time per source, and so do
// prefetch jobs (one per source, beside an attach or refresh); the listing is fetched
// ahead of the import in its own goroutine. Package sourcetest is the
// conformance suite every Source implementation runs.
package source
