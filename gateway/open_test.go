package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestOpenFailureClosesWhatItOpened: when a late step of Open fails (here
// the lease keys are damaged), the kv store and the chunk store it had
// opened are closed: no descriptor stays open and the data directory opens
// again once repaired.
func TestOpenFailureClosesWhatItOpened(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := gateway.Config{DataDir: dir, Owner: auth.Owner{AccessKey: "AKOPEN", SecretKey: "secret-open"}}
	g, err := gateway.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	key := []byte(keyspace.TokenKeys + "lease")
	// withKV runs fn on the closed gateway's kv store.
	withKV := func(fn func(txn kv.Txn) error) {
		db, err := kv.OpenBadger(filepath.Join(dir, "kv"), kv.BadgerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var good []byte
	withKV(func(txn kv.Txn) (err error) { good, err = txn.Get(key); return err })
	setKeys := func(v []byte) { withKV(func(txn kv.Txn) error { return txn.Set(key, v) }) }
	setKeys([]byte("not json"))

	before := openFDs(t)
	for range 3 {
		if _, err := gateway.Open(cfg); err == nil || !strings.Contains(err.Error(), "lease keys") {
			t.Fatalf("open with damaged lease keys: %v", err)
		}
	}
	if after := openFDs(t); after != before {
		t.Errorf("failed opens left %d descriptors open", after-before)
	}
	setKeys(good)
	g, err = gateway.Open(cfg)
	if err != nil {
		t.Fatalf("open after repair: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
