// Package sigv2 authenticates requests to the S3 endpoint with AWS
// Signature Version 2, the HMAC-SHA1 scheme older S3 clients (boto's
// "s3" signature, s3cmd, Hadoop's s3a in V2 mode) still send.
//
// Vocabulary:
//
//   - Header authentication: "Authorization: AWS AccessKeyId:Signature",
//     dated by x-amz-date (or Date) within the same skew as SigV4.
//   - Presigned (query) authentication: AWSAccessKeyId, Signature and
//     Expires (unix seconds) in the query string; a lease adds
//     x-amz-security-token there (in a header for header authentication).
//   - The string to sign is Method, Content-MD5, Content-Type, Date (the
//     Expires value for a presigned URL, empty when x-amz-date is sent),
//     one per line, then the canonicalized amz headers (every x-amz-*
//     header, lower-cased, sorted, values trimmed and joined by commas;
//     for a presigned URL also the x-amz-* query parameters botocore moves
//     there) and the canonicalized resource: "/bucket" for a virtual-host
//     request, the path exactly as sent, and the signed sub-resources
//     (subresources) sorted, values decoded.
//
// Why a package of its own rather than more files in sigv4: the two
// schemes share nothing but their outcome. sigv2 reuses sigv4's
// vocabulary for that outcome (a *sigv4.Result, a sigv4.SecretLookup,
// errors wrapping sigv4's sentinels), so package auth, the one door and
// the only importer of sigv2, checks both with the same rules and every
// edge maps both with its one error table.
//
// Invariants: SigV2 never covers the payload, so every Result says
// sigv4.Unsigned and its Body is the request body as sent; a request that
// asks for a payload hash or aws-chunked framing is refused rather than
// stored unchecked. Result.SignedHeaders lists exactly what the string
// to sign covered (every x-amz-* header, Content-MD5, Content-Type and
// Date when sent): never an x-nas-* header, so the door refuses those.
// Query parameters outside the sub-resources (prefix, marker, max-keys,
// list-type, ...) are not signed by SigV2, as in S3: every parameter
// that selects an operation or a version is a sub-resource, and a
// lease's view bounds what the rest can reach.
// Presigned URLs are refused past Expires, and when Expires lies more than
// MaxPresignAge (seven days, SigV4's bound) ahead. Signatures are compared
// in constant time.
//
// Concurrency: a Verifier is safe for concurrent use once configured.
package sigv2
