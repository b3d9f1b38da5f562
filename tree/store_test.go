package tree_test

import (
	"testing"

	"github.com/agentnas/nas/tree"
	"github.com/agentnas/nas/tree/treetest"
)

func TestMemStore(t *testing.T) {
	treetest.TestNodeStore(t, func(*testing.T) tree.NodeStore { return tree.NewMemStore() })
}

func TestCacheStore(t *testing.T) {
	treetest.TestNodeStore(t, func(*testing.T) tree.NodeStore { return tree.NewCache(tree.NewMemStore(), 1<<20) })
}
