// Package branch turns immutable trees and commits into repositories with
// branches that S3 and the control API can read and write.
//
// Vocabulary:
//   - Repo: one S3 bucket; a tree with history and a set of branches.
//   - Branch: a ref to a head commit plus a staging area of uncommitted
//     writes and tombstones. Reads see staging over the head tree.
//   - Generation: staging is split into numbered generations. Writers always
//     write into the open generation; Commit seals it (opening the next one
//     in the same transaction), folds the sealed generation into a new tree
//     and swaps the head, so writers are never blocked by a commit.
//   - Version: every PUT and DELETE creates a version with its own ID; a
//     version record outlives staging so that versionId reads work for
//     staged, overwritten and committed versions alike.
//   - Lineage: the set of (branch, highest sequence) pairs whose versions a
//     branch has seen; a fork inherits its source's lineage capped at the
//     fork commit, which makes "versions this branch has seen" cheap to test.
//
// Invariants:
//   - A fork shares the source commit and copies nothing: O(1) in objects.
//   - A protected branch changes only through merges: every direct write,
//     including commit, is refused with ErrProtected.
//   - Chunks and content lists are durable before the staging record that
//     references them; the staging record, its version record and its chunk
//     index records are written in one kv transaction.
//   - Reads never observe a half-folded commit: the head and the sealed
//     generation change in one transaction.
//
// kv layout (repo and branch IDs are 8-byte big-endian numbers; key bytes in
// index keys are escaped so that 0x00 terminates them):
//
//	R/<repo name>                          repo record (JSON)
//	B/<repo>/<branch name>                 branch record (JSON)
//	S/<repo><branch><gen><key>             staged write or tombstone
//	SW/<repo><branch><gen><lease id>       a writer of the generation (value:
//	                                       its run), for provenance
//	V/<repo><version id>                   version record
//	K/<repo><esc key><^seq>                version index, newest first
//	C/<repo><commit id>                    commit lineage info (JSON)
//	U/<repo><esc key><upload id>           multipart upload (JSON)
//	P/<repo><upload id><part number>       uploaded part
//	CK/<repo><branch>\x00<name>            checkpoint (JSON)
//	TR/<repo><esc key><^deleted at>        trash entry (JSON): what a merge
//	                                       deleted from a protected branch
//	TQ/<repo><commit id>                   trash a large merge still owes
//	                                       (JSON), until SettleTrash writes it
//	BD/<repo><branch name>\x00<^deleted at>
//	                                       deleted branch (JSON): its head
//	                                       and fork point, restorable and
//	                                       pinned for a retention window
//	RC/<repo><name>                        a repository's configuration
//	                                       document called name ("tagging"),
//	                                       opaque bytes of its owner's format
//	SX/<expires at><repo><branch><key>     a scratch file's version, to delete
//	                                       once it expires (value: repo name,
//	                                       branch name, version ID)
//	BU/<repo><branch>                      a quota branch's usage (JSON), kept
//	                                       with several gateways (SetSharedQuotas)
//	LM/<content hash>                      a content list a write stored while
//	                                       another gateway collects (value: that
//	                                       collection's epoch; online.go)
//
// Change journal: every staging and branch record the Service commits is
// noted in memory (changes.go), so a client can ask which keys changed
// since a cursor (TouchedSince) and trust the rest; a commit is not a
// change. It hears only this process's writes.
//
// Concurrency: Service is safe for concurrent use. Commits on one branch are
// serialized by an in-process lock, or by the Locker given to SetLocker
// (held in the store, across gateways); every other write is an optimistic kv
// transaction that re-runs on conflict.
package branch
