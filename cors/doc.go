// Package cors is the vocabulary of S3 bucket CORS: the
// CORSConfiguration document a bucket owner stores, and the matching of a
// browser's request (its origin, method and requested headers) against
// it.
//
// Vocabulary:
//
//   - Config: a bucket's CORSConfiguration, 1 to MaxRules rules, each with
//     at least one AllowedOrigin and one AllowedMethod (GET, PUT, POST,
//     DELETE or HEAD), optional AllowedHeaders, ExposeHeaders, an ID and
//     MaxAgeSeconds. Decode checks a document as S3 does; Encode gives
//     its one canonical form (no namespace, fields in schema order).
//   - Pattern: an AllowedOrigin or AllowedHeader with at most one "*",
//     which matches any run of bytes ("http://*.example.com", "x-amz-*",
//     "*"). Origins match case-sensitively, headers case-insensitively,
//     methods exactly, as on S3.
//   - Match: the first rule that admits a request, and the response
//     headers it earns: Preflight for an OPTIONS, Actual for the request
//     itself (and its errors).
//
// The package knows nothing of buckets, credentials or storage: the s3api
// edge finds the document and decides when to ask. A Config is immutable
// once decoded and safe for concurrent use.
package cors
