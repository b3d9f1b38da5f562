// Package tree is the persistent, content-addressed sorted map behind every
// commit: the listing of a repository's objects, from key to the canonical
// encoding of an object entry.
//
// Vocabulary:
//   - An entry is a key and a value, both opaque bytes; keys are unique and
//     ordered by bytes.Compare; values may be empty.
//   - A node is an immutable, canonically encoded list of items, named by
//     the BLAKE3 hash of its encoding (a Node, when handed to a store). A
//     leaf (level 0) holds entries; a node of level L > 0 holds references
//     to level L-1 nodes: the child's last key, hash and entry count.
//   - A root is the hash of a tree's top node; the zero hash is the empty
//     tree. A root is the whole handle of a tree version: forking a tree is
//     copying its root, and two trees share every node they have in common.
//   - A NodeStore keeps nodes by hash (the tests keep one in memory;
//     callers bring a durable one). Cache decorates a NodeStore with decoded nodes.
//   - A Tree binds a NodeStore to a Config and carries every operation:
//     Get, NewIterator (Seek, Next), Build, Apply, Diff, Walk, Count, Check.
//
// Shape (history independence). Every key has a level, level(key) =
// trailingZeros64(first 8 bytes of BLAKE3(salt || key)) / B with B = 5, so a
// key has level >= L with probability 2^-5L. A level-L node ends right after
// the first item whose key has a level above L; the last node of each level
// runs to the end. Level L+1 references the nodes of level L, and the root is
// the only node of the lowest level that has one node. Because every boundary
// depends on one key alone, the same set of entries gives the same nodes and
// root whatever order or batching built it, nodes hold 32 items on average,
// and a tree of n entries is about log32(n) levels high (5 for 10^7).
//
// Invariants:
//   - A node's hash is chunk.Sum of its encoding, checked on every read; a
//     node that fails the check or does not decode is ErrCorrupt.
//   - Keys strictly increase within a node and along the tree; a
//     reference's key is its child's last key and its count the child's
//     number of entries, so Count is O(1) at the root.
//   - Equal hashes mean equal key ranges and contents, so Diff skips them
//     and Apply keeps every old subtree that no edit touches.
//   - Apply's result is the tree Build would produce for the resulting set
//     (Check verifies the canonical shape).
//   - Nodes are written children first, in batches; a root is durable once
//     the call that returned it returns. A failed call leaves only garbage
//     nodes that no root references.
//
// Concurrency: a Tree holds no mutable state, nodes never change, and a
// Cache is safe for concurrent use, so every method may run concurrently
// with any other on the same store. Iterators are for one goroutine each.
// Every call that reads or writes takes a context and stops when it is
// cancelled.
//
// Slices handed out (values from Get, keys and values from an Iterator, a
// Change or a NodeView) point into shared decoded nodes: they stay valid and
// must never be modified.
package tree
