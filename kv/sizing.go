package kv

import (
	"fmt"
	"math"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// valueThreshold is the size from which a value goes to Badger's value log
// instead of the LSM (see OpenBadger).
const valueThreshold = 1 << 20

// DefaultBadgerMemory is the memory budget of the embedded store when none
// is given: 128 MiB, split by BadgerSizingFor into 32 MiB of memtables,
// 32 MiB of block cache, 16 MiB of index cache and 2 MiB tables, whose
// ceiling (BadgerSizing.Ceiling) is 500 MiB, and 16 MiB of mapped files
// left resident.
const DefaultBadgerMemory = 128 << 20

// MinBadgerMemory is the smallest budget BadgerSizingFor accepts: its
// caches and table size are already small, and its memtables are at
// their minimum (minMemTable).
const MinBadgerMemory = 64 << 20

// BadgerSizing is what Badger may hold in memory. Badger's memory is its
// memtables (the write buffer: writes land in the active one, full ones
// wait to be flushed to level 0), its block and index caches (bounded by
// their byte cost) and the buffers of the tables it builds when it flushes
// a memtable or compacts: each table builder allocates twice its table's
// size up front, a compaction runs up to 8 builders plus one per split (at
// most 5 splits), and a pool keeps up to 8 used builder buffers. So table
// size and compactors bound the compaction working set, and with tables of
// one size at every level (Badger's own default doubles them each level
// down, which is what let a long run of small PUTs grow to gigabytes) the
// bound holds whatever the store's size.
//
// Compression is off by default: chunk data is mostly incompressible
// (hashed or already compressed content), yet Snappy copies every block
// into a second buffer of the builder and costs CPU on every flush and
// compaction. A heap profile of 8 clients of 4 KiB PUTs put 97% of the
// live heap in those builders (bench/RESULTS.md, "Memory under load").
//
// The zero value of a field means its default (BadgerSizingFor of
// DefaultBadgerMemory); Compression's zero value, false, is the default.
type BadgerSizing struct {
	// MemTableSize is the size of one memtable in bytes; it also bounds a
	// transaction (to 15% of it, Badger's batch limit).
	MemTableSize int64
	// NumMemtables is how many memtables may exist at once, the one being
	// written included; writes stall while that many wait to be flushed.
	NumMemtables int
	// BlockCacheSize is the cache of table blocks in bytes.
	BlockCacheSize int64
	// IndexCacheSize is the cache of table indexes and Bloom filters in
	// bytes; indexes not in it are read from the table file on demand.
	IndexCacheSize int64
	// BaseTableSize is the size of an LSM table in bytes, at every level.
	BaseTableSize int64
	// NumCompactors is how many compactions may run at once.
	NumCompactors int
	// Compression Snappy-compresses table blocks.
	Compression bool
	// MappedResident is how far, in bytes, the store's mapped files (its
	// tables and logs, which Badger reads through the mapping) may grow
	// the process's resident set before they are paged out; negative
	// leaves them to the kernel (see pager).
	MappedResident int64
}

// blockSize is the size of a table block. Badger's 4 KiB holds a single
// 4 KiB inline chunk, and its builder then reallocates the block at twice
// the size for every entry, so building a table took three times its
// data; 32 KiB blocks hold several small chunks and most inline ones
// (cas.InlineMax is 64 KiB) in one allocation.
const blockSize = 32 << 10

// compactionBuilders is how many table builders one compaction keeps at
// most: Badger's throttle of 8 plus one per split, of which it makes at
// most 5 (levels.go, addSplits and compactBuildTables).
const compactionBuilders = 8 + 5

// builderPool is how many used table builders' buffers Badger keeps for
// reuse (z.NewAllocatorPool(8) in db.go).
const builderPool = 8

// BadgerSizingFor splits a memory budget in bytes: a sixteenth to each of
// four memtables (at least 8 MiB each), a quarter to the block cache, an
// eighth to the index cache and a sixty-fourth to the table size, with
// two compactors, and lets the mapped files grow the resident set by an
// eighth of it (half let each compaction's input, read through the
// mapping, add up to 64 MiB peaks to the resident set between page-outs:
// bench/RESULTS.md, "The 4 KiB soak's peaks"). Memtables of 8 MiB rather
// than 16 halved the resident set of 8 clients of 4 KiB PUTs (bench/RESULTS.md, "Memory under load"): a
// memtable's flush grows its table builder's buffers to about one and a
// half times the memtable, and Badger keeps up to eight used builders'
// buffers for reuse. BadgerSizing.Ceiling is the sum of the worst cases.
// A budget below MinBadgerMemory is an error.
func BadgerSizingFor(budget int64) (BadgerSizing, error) {
	if budget < MinBadgerMemory {
		return BadgerSizing{}, fmt.Errorf("kv memory %d bytes: want at least %d (64 MiB)", budget, MinBadgerMemory)
	}
	return BadgerSizing{
		MemTableSize:   max(budget/16, minMemTable),
		NumMemtables:   4,
		BlockCacheSize: budget / 4,
		IndexCacheSize: budget / 8,
		BaseTableSize:  max(budget/64, 1<<20),
		NumCompactors:  2,
		MappedResident: budget / 8,
	}, nil
}

// minMemTable is the smallest memtable BadgerSizingFor gives: Badger caps
// a batch at 15% of a memtable, which must hold a value just under the
// 1 MiB value threshold.
const minMemTable = 8 << 20

// withDefaults fills the zero fields of s from the default budget.
func (s BadgerSizing) withDefaults() BadgerSizing {
	d, _ := BadgerSizingFor(DefaultBadgerMemory)
	fill := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&s.MemTableSize, d.MemTableSize)
	fill(&s.BlockCacheSize, d.BlockCacheSize)
	fill(&s.IndexCacheSize, d.IndexCacheSize)
	fill(&s.BaseTableSize, d.BaseTableSize)
	fill(&s.MappedResident, d.MappedResident)
	if s.NumMemtables == 0 {
		s.NumMemtables = d.NumMemtables
	}
	if s.NumCompactors == 0 {
		s.NumCompactors = d.NumCompactors
	}
	return s
}

// check rejects sizes Badger would refuse or misbehave with.
func (s BadgerSizing) check() error {
	switch {
	case s.MemTableSize*15/100 < valueThreshold:
		return fmt.Errorf("memtable size %d: want at least %d, so a batch holds a value below the 1 MiB value threshold", s.MemTableSize, minMemTable)
	case s.NumMemtables < 2:
		return fmt.Errorf("%d memtables: want at least 2 (one written, one flushing)", s.NumMemtables)
	case s.NumCompactors < 2:
		// Badger's compactor 0 is reserved for level 0.
		return fmt.Errorf("%d compactors: want at least 2", s.NumCompactors)
	case s.BlockCacheSize < 0 || s.IndexCacheSize < 0 || s.BaseTableSize <= 0:
		return fmt.Errorf("negative cache or table size")
	}
	return nil
}

// Ceiling is the most memory in bytes Badger's buffers and caches take
// under s: the memtables, the caches, and the table builders' buffers: a
// memtable's flush, the compactions' builders and the pool of used ones
// Badger keeps, each at most what a flush grows one to (see
// flushBuffers). It leaves out the Go runtime's overhead (the garbage
// collector lets the heap grow past the live data, by GOGC, up to the
// process's memory limit) and the pages of the mapped files, which
// MappedResident bounds apart.
func (s BadgerSizing) Ceiling() int64 {
	s = s.withDefaults()
	memtables := int64(s.NumMemtables) * s.MemTableSize
	caches := s.BlockCacheSize + s.IndexCacheSize
	builder := max(s.flushBuffers(), 2*s.BaseTableSize)
	if s.Compression {
		// Snappy writes each block again into the same builder.
		builder *= 2
	}
	return memtables + caches + int64(s.NumCompactors*compactionBuilders+1+builderPool)*builder
}

// flushBuffers is what a table builder's buffers grow to while it writes
// a memtable's table: they start at twice the table size and each new
// one doubles the last, until they hold the memtable and an eighth more
// for the table's index and filter (ristretto's z.Allocator under
// Badger's table.Builder). A builder returned to Badger's pool keeps
// them, so a compaction that reuses it holds as much.
func (s BadgerSizing) flushBuffers() int64 {
	need := s.MemTableSize + s.MemTableSize/8
	var total int64
	for page := max(2*s.BaseTableSize, 1); total < need; page *= 2 {
		if page > math.MaxInt64-total || page > math.MaxInt64/2 {
			return math.MaxInt64 // sizes no machine has; do not wrap
		}
		total += page
	}
	return total
}

// apply sets s on Badger's options.
func (s BadgerSizing) apply(o badger.Options) badger.Options {
	c := options.None
	if s.Compression {
		c = options.Snappy
	}
	// One table size at every level bounds a builder whatever the
	// store's size (see BadgerSizing).
	o.TableSizeMultiplier = 1
	return o.WithMemTableSize(s.MemTableSize).
		WithNumMemtables(s.NumMemtables).
		WithBlockCacheSize(s.BlockCacheSize).
		WithIndexCacheSize(s.IndexCacheSize).
		WithBaseTableSize(s.BaseTableSize).
		WithNumCompactors(s.NumCompactors).
		WithBlockSize(blockSize).
		WithCompression(c).
		// Level 0 stalls writes at this many tables; Badger's 5 and 15
		// keep, with 16 MiB memtables, at most 240 MiB at level 0.
		WithNumLevelZeroTables(5).
		WithNumLevelZeroTablesStall(15)
}
