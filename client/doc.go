// Package client is a client of the gateway for programs that are not S3
// tools: the control API (POST /_nas/v1/NOUN/VERB, JSON) and the handful of
// S3 object calls a file system and the CLI's object commands need
// (ranged GET, PUT, DELETE, multipart uploads, a metadata-only self copy,
// server-side copy across branches, ListObjectsV2 with continuation tokens,
// DeleteObjects in batches of 1000), all signed with SigV4 using the contract's
// credentials (the owner's keys or a lease's temporary credentials).
//
// Vocabulary:
//   - Config: endpoint, credentials and retry policy; Resolve builds one
//     from flags, the NAS_* and AWS_* variables or a lease file.
//   - Client: safe for concurrent use; every call takes a context.
//   - Error: the gateway's answer to a failed call (S3 or control API),
//     with the HTTP status, the error code and whether a retry may help.
//
// Retries: a call that fails for a reason a retry may cure (the gateway
// unreachable, a 5xx, SlowDown) is retried a bounded number of times with
// exponential backoff, then returned; nothing here ever retries forever.
// Writes are retried only when they are idempotent (PUT of the same bytes,
// DELETE, and control-API writes, which carry an idempotency key).
package client
