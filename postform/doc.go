// Package postform reads the browser forms of S3 POST Object
// (multipart/form-data) and checks them against their POST policy.
//
// Vocabulary:
//
//   - Form: the fields that precede the file part, in the order sent, and
//     the file part itself, left unread for the caller to stream. Field
//     names are matched case-insensitively, as S3 does; fields after the
//     file are never read.
//   - Policy: the base64 JSON document the form carries, with an
//     expiration and conditions: exact matches ({"key": "v"} and
//     ["eq", "$key", "v"]), prefixes (["starts-with", "$key", "p"], an
//     empty prefix matching anything) and the file's size range
//     (["content-length-range", min, max]).
//
// Invariants: Read holds at most MaxFields bytes of field names and
// values and a bounded number of header bytes, whatever the client
// sends; the file's bytes are never buffered. Check accepts a form only
// if every field is covered by a condition (but policy, x-amz-signature, signature, awsaccesskeyid,
// file and x-ignore-* fields) and every condition holds. This package
// does not verify the signature: that is the door's (auth, sigv4).
//
// Concurrency: a Form belongs to the request's goroutine; a Policy is
// immutable once decoded.
package postform
