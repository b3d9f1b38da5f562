package kv

import (
	"math"
	"testing"
)

func TestBadgerSizingFor(t *testing.T) {
	s, err := BadgerSizingFor(DefaultBadgerMemory)
	if err != nil {
		t.Fatal(err)
	}
	want := BadgerSizing{MemTableSize: 8 << 20, NumMemtables: 4, BlockCacheSize: 32 << 20, IndexCacheSize: 16 << 20,
		BaseTableSize: 2 << 20, NumCompactors: 2, MappedResident: 16 << 20}
	if s != want {
		t.Fatalf("BadgerSizingFor(128 MiB) = %+v, want %+v", s, want)
	}
	// The ceiling DefaultBadgerMemory's doc comment and the README state.
	if got := s.Ceiling(); got != 500<<20 {
		t.Fatalf("default ceiling %d MiB, want 500", got>>20)
	}
	if got := (BadgerSizing{}).Ceiling(); got != 500<<20 {
		t.Fatalf("zero sizing's ceiling %d MiB, want the default's 500", got>>20)
	}
	if _, err := BadgerSizingFor(MinBadgerMemory - 1); err == nil {
		t.Fatal("a budget below the minimum was accepted")
	}
	small, err := BadgerSizingFor(MinBadgerMemory)
	if err != nil {
		t.Fatal(err)
	}
	if err := small.withDefaults().check(); err != nil {
		t.Fatalf("the minimum budget's sizing fails its own check: %v", err)
	}
}

// TestFlushBuffers: a flush's builder starts at twice the table size and
// doubles its buffers until they hold the memtable and its index.
func TestFlushBuffers(t *testing.T) {
	for _, tc := range []struct{ mem, table, want int64 }{
		{8 << 20, 2 << 20, 12 << 20},  // 4 + 8
		{16 << 20, 2 << 20, 28 << 20}, // 4 + 8 + 16: the sizing before memtables of 8 MiB
		{8 << 20, 8 << 20, 16 << 20},  // one buffer of twice the table holds it
		{8 << 20, -1, 1<<24 - 1},      // a table size check refuses still ends: 1 + 2 + 4 ... bytes
		{math.MaxInt64 / 2, 2 << 20, math.MaxInt64},
	} {
		s := BadgerSizing{MemTableSize: tc.mem, BaseTableSize: tc.table}
		if got := s.flushBuffers(); got != tc.want {
			t.Errorf("memtable %d MiB, tables %d MiB: %d MiB, want %d", tc.mem>>20, tc.table>>20, got>>20, tc.want>>20)
		}
	}
}

func TestBadgerSizingCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    BadgerSizing
	}{
		{"memtable too small for the value threshold", BadgerSizing{MemTableSize: 4 << 20}},
		{"one memtable", BadgerSizing{NumMemtables: 1}},
		{"one compactor", BadgerSizing{NumCompactors: 1}},
		{"negative cache", BadgerSizing{BlockCacheSize: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.s.withDefaults().check(); err == nil {
				t.Fatalf("%+v passed the check", tc.s)
			}
		})
	}
	if err := (BadgerSizing{}).withDefaults().check(); err != nil {
		t.Fatalf("the default sizing fails the check: %v", err)
	}
}

func TestOpenBadgerSizing(t *testing.T) {
	if _, err := OpenBadger(t.TempDir(), BadgerOptions{Sizing: BadgerSizing{NumCompactors: 1}}); err == nil {
		t.Fatal("OpenBadger accepted one compactor")
	}
	sz, err := BadgerSizingFor(MinBadgerMemory)
	if err != nil {
		t.Fatal(err)
	}
	sz.Compression = true
	db, err := OpenBadger(t.TempDir(), BadgerOptions{Sizing: sz})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
