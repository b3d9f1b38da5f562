// Package record is the flight recorder: an append-only, hash-chained log
// of consequential events plus a read manifest per run, answering after
// the fact "who did this, on whose behalf, under which lease, and what had
// the run read?".
//
// Vocabulary:
//   - Event: one record of the log (lease issued, commit, merge, gate
//     decision, denial, delete, ...). Append assigns its Seq (1, 2, 3, ...
//     with no gaps), its Time (UTC, never earlier than the previous
//     record's), its PrevHash (the previous record's Hash; the zero Hash,
//     "sha256:" and 64 zeros, for the first record) and its Hash.
//   - Chain head: the last record's seq, hash and time, stored under one
//     key that every append reads and rewrites in the same transaction as
//     the record, so two appends can never link to the same predecessor:
//     one of them conflicts in kv and is retried against the new head.
//   - Read manifest: per run, which object versions (path@commit or
//     version ID) were read, which byte ranges and which content hashes;
//     never content. Manifests buffers reads in memory, merges adjacent
//     and overlapping ranges of one object, and flushes them as pages.
//     Events name a run's manifest by ManifestID(run), "rm_<run>".
//   - Verify walks everything and reports Problems; CheckAnchor compares
//     the log with a Head published elsewhere; Explain gathers the events,
//     run, lease, gates and manifest behind a commit.
//
// Record first, then act: a consequential operation writes its intent
// record before it takes effect and fails when the record cannot be
// written. With AppendTxn the record is written in the operation's own kv
// transaction, so neither exists without the other; with Append the caller
// acts only after Append returned nil. Reads are recorded after they
// happen and become durable within ManifestOptions.FlushInterval; a caller
// that names a run's manifest in an event flushes the run first. Memory
// for buffered reads is bounded: a full buffer flushes in Add, and while
// flushes fail Add refuses reads beyond twice the bound.
//
// Canonical encoding (format 1). A record's Hash is SHA-256 over its body:
//
//	1 byte    format, 1
//	8 bytes   seq, big-endian
//	8 bytes   time, Unix nanoseconds, big-endian two's complement
//	32 bytes  prev_hash, the raw digest
//	15 strings, each uvarint(length) then the bytes, in this order: kind,
//	          run, principal, on_behalf_of, lease, purpose, repo, branch,
//	          subject.path, subject.commit, subject.version_id,
//	          decision.effect, decision.rule, decision.reason, read_manifest
//	uvarint   number of details, then each as key string, value string,
//	          keys in strictly increasing byte order
//
// Varints are minimal and nothing may follow the last detail; the decoder
// refuses anything else, so each event has exactly one body. The stored
// value is the body followed by the 32-byte Hash. Fixed cost: 97 bytes
// (49 fixed, 16 length and count bytes, 32 hash) plus the strings, plus
// one more length byte for each string of 128 bytes or more; the record
// sketched in the specification (commit by run_91ab under lse_7Qk3) is 225
// bytes. Strings are UTF-8; Append refuses invalid UTF-8 so that the JSON
// form (RFC 3339 time, "sha256:<hex>" hashes, snake_case fields) carries
// exactly the hashed values.
//
// An event with ReadManifest set is bound to that manifest: AppendTxn adds
// the manifest's page count and page-chain hash as the details
// DetailManifestPages and DetailManifestHash, so the pages flushed before
// the event are covered by the event chain too.
//
// Read manifest page (format 1): 1 byte format, uvarint count, then per
// entry path, commit, version_id, etag as strings, uvarint offset, uvarint
// length, 8-byte time, uvarint hash count and the hashes as strings: about
// 16 bytes plus the strings per entry (a 40-byte path at a 40-hex commit
// with a 34-byte ETag and one 71-byte hash: about 200 bytes). A page holds
// at most ManifestOptions.BatchSize entries. The summary holds the page
// count, entries, bytes, first and last time and the page-chain hash
// hN = SHA-256(hN-1 || page N value) with h0 zero (73 bytes).
//
// kv layout (seq and page numbers are 8-byte big-endian; <lp run> is
// uvarint(len) then the run; <esc v> is v with 0x00 written as 0x00 0xff,
// then 0x00 0x01, so index values sort and prefix-match as themselves):
//
//	F/h                          chain head: seq, hash, time (48 bytes)
//	F/e<seq>                     record: body and hash
//	FX/r/<esc run><seq>          index by run (empty value)
//	FX/l/<esc lease><seq>        index by lease
//	FX/c/<esc commit><seq>       index by subject.commit
//	FR/<lp run>p<page>           read manifest page
//	FR/<lp run>s                 read manifest summary (73 bytes)
//
// An append writes the record (11-byte key), rewrites the head (3 + 48
// bytes) and writes one index entry (15 bytes plus the value) for each of
// run, lease and subject.commit that is set.
//
// Invariants, all checked by Verify: records 1..N exist with no gaps; each
// hashes to its stored hash and links to its predecessor's; times never
// decrease; the head names record N; every index entry names a record with
// that value and every record has its entries; every manifest's pages are
// numbered 1..P and chain to its summary's hash and to every binding.
// Verify detects any alteration short of rewriting the whole chain after
// the altered record together with the head and the indexes (truncating
// the tail is such a rewrite); that remains possible for whoever can write
// the store, and only an external anchor (a Head kept elsewhere, checked
// with CheckAnchor) catches it.
//
// Concurrency: Recorder and Manifests are safe for concurrent use.
// Concurrent Append calls are group-committed (one kv transaction and one
// fsync for up to Options.MaxBatch records); transactions that call
// AppendTxn run through Recorder.Update, which serializes them with the
// group commits, since every append conflicts with every other on the head. Reads (List, Get, Explain,
// Verify, ReadManifest) see one snapshot each. Neither type starts
// goroutines: Manifests flushes in the background only inside Run, which
// the caller starts and Close stops.
package record
