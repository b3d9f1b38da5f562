// Package gateway assembles a running gateway from a data directory: it
// opens the kv store and the chunk store, builds the branch service and the
// S3 and control-API handlers, and serves them over HTTP(S) with a clean
// shutdown.
//
// Data directory layout:
//
//	DATA/kv/           Badger (all metadata and small chunks)
//	DATA/chunks/       segment files of larger chunks
//	DATA/credentials   the owner's generated credentials (JSON, mode 0600)
//
// Badger allows one process per directory; a second gateway on the same
// directory fails to start rather than corrupting it.
//
// Gateways sharing a metadata store (Config.Meta, PostgreSQL), one chunk
// store (a shared directory, or a bucket: Config.Chunks) and one keyring
// are stateless: budgets are charged in the store in one transaction per
// charge, quota branches' usage is kept in the store, a branch's
// commits, merges and restores and gate decisions take a lock held in
// the store (kvlock), the flight recorder's appends read and write the
// one chain head serializably (one global chain), webhooks, expiry and
// checks and periodic collections are duties one gateway holds, and a
// garbage collection on one gateway runs with the others taking part
// (epoch.go; branch.HoldForCollection).
//
// kv layout:
//
//	GW/<gateway id>       a live gateway (JSON: host, start, heartbeat,
//	                      the collection it takes part in and the
//	                      segments it had open then)
//	GE/current            the collection running across gateways (JSON:
//	                      ID, collector, start, the gateways taking part)
//	GL/<name>             a lock across gateways (JSON: holder token,
//	                      expiry): <repo>\x00<branch> for head-moving
//	                      work, gc for a collection
package gateway
