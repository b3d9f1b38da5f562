// Package checksum computes and verifies the integrity values S3 clients
// attach to uploads: Content-MD5 and the x-amz-checksum-* family.
//
// Vocabulary:
//
//   - An Algorithm is one of the checksum functions S3 knows, spelled as S3
//     spells it (CRC32, CRC32C, CRC64NVME, SHA1, SHA256).
//   - A value is the base64 (standard encoding, padded) of the big-endian
//     digest, exactly as it travels in headers, trailers and XML.
//   - A Set is what one PUT or UploadPart request asked for: the optional
//     Content-MD5, at most one x-amz-checksum algorithm (sent as a header, as
//     an aws-chunked trailer announced by x-amz-trailer, or only named by
//     x-amz-sdk-checksum-algorithm) and the MD5 that is always computed
//     because the S3 ETag of a single-part object is its hex MD5.
//   - A COMPOSITE multipart checksum is the checksum of the concatenated raw
//     part digests followed by "-N"; a FULL_OBJECT multipart checksum is the
//     CRC of the whole object, derived from part CRCs and sizes by
//     CombineCRC without reading the data again.
//
// Invariants: a Set verifies nothing until Verify is called after the whole
// body went through Writer; Value and MD5 are only meaningful then too.
// Close ends a Set's hashing (Algorithm and Value still answer). A Set is
// not safe for concurrent use. Algorithm values, Composite and CombineCRC
// are pure and safe for concurrent use.
//
// MD5 of concurrent uploads: a large body (its first write at least 64 KiB,
// a chunk) hashed while eight or more others are takes a lane of one shared
// github.com/minio/md5-simd server, whose goroutine hashes up to 16 bodies
// at once on one core; fewer bodies, and small ones, use crypto/md5 on the
// writer's goroutine, which costs less unless many bodies' blocks reach the
// server together. Lanes are reused, never closed, and bounded (maxLanes);
// Close gives a Set's lane back.
package checksum
