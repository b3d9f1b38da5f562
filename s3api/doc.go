// Package s3api is the S3 protocol layer: it authenticates requests
// (SigV4), maps buckets, keys and subresources onto repositories, branches
// and objects, streams bodies in and out of the chunk store, and translates
// internal errors into S3 error documents. It keeps no state of its own.
//
// Addressing: the bucket comes from the first path segment (path style) or
// from the Host header under one of the configured domains (virtual-host
// style). The key is the rest of the path after one percent-decode; it is
// never cleaned or normalized. The branch is chosen by, in order:
//  1. the x-nas-branch header, honoured only when the signature covers it;
//  2. the header-less alias bucket "REPO_BRANCH" (see ParseAlias), for
//     clients that cannot send headers;
//  3. the repository's default branch.
//
// Errors: every failure becomes exactly one S3 error via toS3, the single
// translation table of this edge; nothing reaches a client as a panic or a
// bare 500 without an error document.
package s3api
