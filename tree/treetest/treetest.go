// Package treetest is the conformance suite that every tree.NodeStore
// implementation runs from its own tests:
//
//	func TestNodeStore(t *testing.T) {
//		treetest.TestNodeStore(t, func(t *testing.T) tree.NodeStore { return newStore(t) })
//	}
package treetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/tree"
)

// TestNodeStore runs the NodeStore conformance suite against stores made by
// newStore, one fresh store per subtest.
func TestNodeStore(t *testing.T, newStore func(t *testing.T) tree.NodeStore) {
	for _, c := range []struct {
		name string
		test func(*testing.T, tree.NodeStore)
	}{
		{"PutGet", testPutGet},
		{"Missing", testMissing},
		{"Idempotent", testIdempotent},
		{"CallerMayReuseBuffers", testCallerMayReuseBuffers},
		{"Concurrent", testConcurrent},
		{"Tree", testTree},
	} {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

// node returns the node holding s.
func node(s string) tree.Node {
	return tree.Node{Hash: chunk.Sum([]byte(s)), Data: []byte(s)}
}

// testPutGet checks that stored nodes read back as stored.
func testPutGet(t *testing.T, s tree.NodeStore) {
	ctx := context.Background()
	a, b := node("a"), node("bb")
	if err := s.PutNodes(ctx, []tree.Node{a, b}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []tree.Node{a, b} {
		got, err := s.GetNode(ctx, n.Hash)
		if err != nil || !bytes.Equal(got, n.Data) {
			t.Fatalf("get %s = %q, %v", n.Hash, got, err)
		}
	}
}

// testMissing checks that a node never stored is ErrNodeNotFound.
func testMissing(t *testing.T, s tree.NodeStore) {
	if _, err := s.GetNode(context.Background(), chunk.Sum([]byte("absent"))); !errors.Is(err, tree.ErrNodeNotFound) {
		t.Fatalf("missing node: %v, want ErrNodeNotFound", err)
	}
}

// testIdempotent checks that storing a node again, in the same call or
// another, and storing nothing, are no errors.
func testIdempotent(t *testing.T, s tree.NodeStore) {
	ctx := context.Background()
	a := node("a")
	for i := 0; i < 3; i++ {
		if err := s.PutNodes(ctx, []tree.Node{a, a}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutNodes(ctx, nil); err != nil {
		t.Fatalf("empty put: %v", err)
	}
	if got, err := s.GetNode(ctx, a.Hash); err != nil || !bytes.Equal(got, a.Data) {
		t.Fatalf("get = %q, %v", got, err)
	}
}

// testCallerMayReuseBuffers checks that the store keeps no reference to
// the data it was given.
func testCallerMayReuseBuffers(t *testing.T, s tree.NodeStore) {
	ctx := context.Background()
	buf := []byte("original")
	n := tree.Node{Hash: chunk.Sum(buf), Data: buf}
	if err := s.PutNodes(ctx, []tree.Node{n}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXX")
	if got, err := s.GetNode(ctx, n.Hash); err != nil || string(got) != "original" {
		t.Fatalf("get after the caller reused its buffer = %q, %v", got, err)
	}
}

// testConcurrent checks puts and gets from eight goroutines at once.
func testConcurrent(t *testing.T, s tree.NodeStore) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				n := node(fmt.Sprintf("node %d", i))
				if err := s.PutNodes(ctx, []tree.Node{n}); err != nil {
					errs <- err
					return
				}
				if got, err := s.GetNode(ctx, n.Hash); err != nil || !bytes.Equal(got, n.Data) {
					errs <- fmt.Errorf("get %d = %q, %v", i, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// testTree checks a 2000-entry tree built over the store.
func testTree(t *testing.T, s tree.NodeStore) {
	ctx := context.Background()
	tr := tree.New(s, tree.Config{})
	var entries []tree.Entry
	for i := 0; i < 2000; i++ {
		entries = append(entries, tree.Entry{Key: fmt.Appendf(nil, "key/%05d", i), Value: fmt.Appendf(nil, "v%d", i)})
	}
	root, err := tr.Build(ctx, func(yield func(tree.Entry, error) bool) {
		for _, e := range entries {
			if !yield(e, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Check(ctx, root); err != nil {
		t.Fatal(err)
	}
	v, ok, err := tr.Get(ctx, root, []byte("key/01234"))
	if err != nil || !ok || string(v) != "v1234" {
		t.Fatalf("get = %q, %v, %v", v, ok, err)
	}
}
