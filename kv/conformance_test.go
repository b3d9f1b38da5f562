package kv_test

import (
	"testing"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvtest"
)

// badgerGaps are the parts of the kv contract Badger is known to miss.
var badgerGaps = map[string]string{
	// Badger's conflict detection records the keys a transaction read
	// (Get, and every item a Scan visited), not the ranges it scanned: two
	// transactions that each find a range empty and insert into it both
	// commit.
	"NoPhantomInsert": "Badger: conflicts are tracked per key read, not per range scanned, so an insert " +
		"into a range another transaction found empty is not a conflict (phantom)",
}

// badgerMemoryGaps adds the gaps of the in-memory mode (tests only).
var badgerMemoryGaps = map[string]string{
	"NoPhantomInsert": badgerGaps["NoPhantomInsert"],
	// A value of 1 MiB or more reaches Badger's value threshold, which
	// cannot be raised above 1 MiB; in memory there is no value log, and
	// Badger's writeToLSM panics (index out of range) on such a value.
	"LongKeysAndValues": "Badger in memory: a value of 1 MiB (>= ValueThreshold) panics in writeToLSM, " +
		"there being no value log; on disk it goes to the value log",
}

// gapped declares the known gaps of the DB it wraps.
type gapped struct {
	kv.DB
	gaps map[string]string
}

func (g gapped) KnownGaps() map[string]string { return g.gaps }

// TestBadgerConformance runs the kv contract against Badger on disk (with
// the group-commit syncer) and in memory.
func TestBadgerConformance(t *testing.T) {
	for _, mem := range []bool{false, true} {
		name, gaps := "disk", badgerGaps
		if mem {
			name, gaps = "memory", badgerMemoryGaps
		}
		t.Run(name, func(t *testing.T) {
			kvtest.TestDB(t, func(t *testing.T) kv.DB {
				db, err := kv.OpenBadger(t.TempDir(), kv.BadgerOptions{InMemory: mem})
				if err != nil {
					t.Fatal(err)
				}
				return gapped{DB: db, gaps: gaps}
			})
		})
	}
}
