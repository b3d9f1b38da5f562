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
package gateway
