package kv

import (
	"testing"
)

func TestBadgerSizingFor(t *testing.T) {
	s, err := BadgerSizingFor(DefaultBadgerMemory)
	if err != nil {
		t.Fatal(err)
	}
	want := BadgerSizing{MemTableSize: 16 << 20, NumMemtables: 3, BlockCacheSize: 32 << 20, IndexCacheSize: 16 << 20,
		BaseTableSize: 2 << 20, NumCompactors: 2, MappedResident: 64 << 20}
	if s != want {
		t.Fatalf("BadgerSizingFor(128 MiB) = %+v, want %+v", s, want)
	}
	// The ceiling DefaultBadgerMemory's doc comment and the README state.
	if got := s.Ceiling(); got != 264<<20 {
		t.Fatalf("default ceiling %d MiB, want 264", got>>20)
	}
	if got := (BadgerSizing{}).Ceiling(); got != 264<<20 {
		t.Fatalf("zero sizing's ceiling %d MiB, want the default's 264", got>>20)
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
