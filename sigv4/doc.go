// Package sigv4 authenticates requests to the S3 endpoint with AWS
// Signature Version 4 and decodes aws-chunked upload bodies.
//
// Vocabulary:
//
//   - Header authentication: an "Authorization: AWS4-HMAC-SHA256
//     Credential=..., SignedHeaders=..., Signature=..." header, dated by
//     X-Amz-Date (or Date) within MaxSkew of the server clock.
//   - Presigned (query) authentication: X-Amz-Algorithm, X-Amz-Credential,
//     X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature and
//     optionally X-Amz-Security-Token in the query string.
//   - The scope is date/region/service/aws4_request; the signing key is
//     derived from the secret and the scope (SigningKey) and cached per
//     Verifier.
//   - The canonical request is built from what travelled on the wire: the
//     path exactly as sent (S3 neither normalises nor re-encodes it, so
//     "..", "//" and "%2F" stay as they are), the query re-encoded and
//     sorted, the signed headers in the client's order, and the payload
//     hash from x-amz-content-sha256.
//   - The payload mode (PayloadMode) says how the body is covered: not at
//     all (UNSIGNED-PAYLOAD), by a SHA-256 checked at end of body, or by an
//     aws-chunked stream whose chunks and trailers are signed in a chain
//     seeded by the request signature, or unsigned chunks with trailers.
//
// Invariants: Verify never trusts the body before it has been read;
// Result.Body reports a bad chunk signature, a hash mismatch or a
// truncated stream as a Read error at the end of the chunk or body, so
// nothing read from it may be committed before Read returns io.EOF. The
// aws-chunked decoder streams with bounded memory (one pooled 64 KiB
// buffer, 4 KiB per header line, 16 KiB of trailers) whatever the client
// sends. Signatures are compared in constant time.
//
// Concurrency: a Verifier is safe for concurrent use once configured; a
// Result and its Body belong to the request's goroutine.
package sigv4
