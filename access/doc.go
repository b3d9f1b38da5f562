// Package access is the record of one request that the edges fill in and
// the gateway writes out: one access-log line and the request metrics.
//
// Vocabulary: an Entry is created by the gateway for every request and
// carried in the request's context (With, From). The edge that serves the
// request (s3api, the control API, STS) names the API, the operation, the
// repository and branch, the request ID and the principal; the gateway
// measures status, bytes and duration itself.
//
// Invariants: an Entry never holds secrets (keys, session tokens,
// signatures), and of its fields only API and Operation are bounded enums
// fit for metric labels; Repo, Branch and Principal go to the log only.
//
// Concurrency: an Entry belongs to its request's handler goroutine; it is
// read after the handler returned.
package access
