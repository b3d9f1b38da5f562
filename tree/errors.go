package tree

import "errors"

var (
	// ErrNodeNotFound is returned (wrapped) by a NodeStore's GetNode when no
	// node has the requested hash, and by every tree operation that needs
	// such a node.
	ErrNodeNotFound = errors.New("tree: node not found")
	// ErrCorrupt is returned when a stored node does not hash to its name,
	// does not decode, or breaks the tree's structure (wrong level, keys out
	// of order or outside the range its parent gives it, wrong counts).
	ErrCorrupt = errors.New("tree: corrupt node")
	// ErrUnsorted is returned by Apply and Build when their input keys are
	// not strictly increasing.
	ErrUnsorted = errors.New("tree: keys not strictly increasing")
	// ErrKeyTooLarge is returned by Apply and Build for a key longer than
	// MaxKeySize.
	ErrKeyTooLarge = errors.New("tree: key too large")
	// SkipSubtree may be returned by a Walk callback to skip the children
	// of the node just visited; Walk then carries on with its siblings. It
	// is not an error and Walk never returns it.
	//lint:ignore ST1012 a signal to Walk, named like filepath.SkipDir.
	SkipSubtree = errors.New("tree: skip subtree")
)
