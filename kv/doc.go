// Package kv is the small ordered key-value interface that every durable
// piece of metadata goes through: refs, staging, tree nodes, version records,
// multipart state and small chunks.
//
// Vocabulary: a DB is opened once per process; View runs a read-only
// transaction that sees one consistent snapshot; Update runs a read-write
// transaction that commits atomically or not at all (it is retried on
// conflicts, so its function must be free of side effects outside the Txn);
// Batch writes many independent keys without atomicity, for idempotent data
// such as content-addressed nodes.
//
// The interface is deliberately small (get, set, delete, ordered scan, atomic
// multi-key transaction) so that a distributed engine can sit behind it. The
// embedded default is Badger, durable on commit: a committed Update is on
// stable storage before it returns, and concurrent commits share one sync
// round of its logs (the group-commit syncer, syncer.go). kv/pgkv is the PostgreSQL
// engine, for several gateways sharing one database. kvtest.TestDB is the
// contract every engine passes; the gaps an engine is known to have (such
// as Badger's phantoms: it tracks conflicts per key read, not per range
// scanned) are declared next to its test.
//
// Keys and values handed to callbacks are only valid inside the callback;
// Get returns a copy.
//
// Memory: BadgerSizing bounds what Badger holds (memtables, caches, the
// table builders of flushes and compactions), 500 MiB by default
// (DefaultBadgerMemory, BadgerSizing.Ceiling). Badger also maps its table
// files and reads through the mapping, so recently used parts of the store
// become resident as mapped file pages; on Linux a pager pages them out
// (MADV_PAGEOUT) whenever they have grown the process's resident set by
// BadgerSizing.MappedResident (an eighth of the budget) since it last
// did, so that part follows the configuration too, not the store's size.
package kv
