// Package fuse mounts a branch of a repository as a POSIX directory
// (go-fuse), as a network client of the gateway: every operation becomes
// a signed S3 or control-API call with the mount's credentials, so the
// gateway stays the single point of authorization and the mount never
// decides who may do what. A lease's mount sees exactly the lease's small
// world: what it may not see answers ENOENT and is absent from listings.
//
// Vocabulary:
//   - Mount: one mounted branch; Options say where, as whom, how.
//   - dirNode, fileNode, linkNode: the inodes. A directory is a key
//     prefix ("a/b/"), present when a key lies under it, when a marker
//     object "a/b/" exists (an empty directory made by mkdir), or when the
//     lease's own path globs name it (so a run can create files in an
//     empty part of its view). A file is an object; a symbolic link is an
//     object whose body is the target and whose "mode" metadata says
//     S_IFLNK (the s3fs convention).
//   - staged: a file's unsaved changes, in a sparse local file, over the
//     version they edit (the base). Flush (close) and fsync upload them:
//     a PUT, or a compose that reuses the base's chunks when only a few
//     bytes changed. close and fsync return only once the gateway has
//     acknowledged the data.
//   - handle: an open file. Reads are ranged and lazy, with read-ahead,
//     verified chunk by chunk against the object's chunk map and kept in
//     the host-wide chunk cache (package chunkcache). A lease's read is
//     authorized and charged by the gateway even when its bytes come from
//     the cache (control API object/reads), so budgets, the read manifest
//     and revocation stay exact.
//
// Caching: the kernel and the mount trust names and attributes for the
// TTL; while the mount follows the gateway's change journal
// (object/touched, follow.go) and the gateway says it hears every write,
// the kernel keeps them for an hour and the mount trusts what it asked
// after following began, forgetting (then invalidating in the kernel)
// whatever another client changed as soon as the journal names it.
//
// Metadata: file mode and modification time are user metadata "mode"
// (decimal st_mode) and "mtime" (seconds.nanoseconds), the conventions of
// s3fs and rclone. Ownership is the mounting user's.
//
// Commits: fsync of the mount's root commits the branch; otherwise the
// branch is committed after a few quiet seconds (Options.CommitAfter).
//
// Errors (the specification's table, one translation in errno.go):
// outside the lease ENOENT; visible but refused EACCES (EROFS on a
// read-only mount); budget spent EDQUOT; lease expired or revoked ESTALE,
// after which the mount is read-only; gateway unreachable or failing EIO
// after bounded retries. Never ENOSYS. Never EINTR once the gateway may
// have made a change: an operation that changes it (close, fsync, mkdir,
// symlink, unlink, rmdir, rename, setattr) finishes when the caller is
// signalled, since a retry would find the change made.
//
// Concurrency: each node's mutex guards its attributes and staged
// changes; Mount.ns orders renames against uploads and lookups, so an
// upload never lands at a name that a concurrent rename has left.
package fuse
