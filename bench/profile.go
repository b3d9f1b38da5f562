package bench

import (
	"fmt"
	"time"
)

// Case is one cell of the PUT and GET matrix.
type Case struct {
	Size        int64
	Concurrency int
}

// Profile holds every size, count and duration of a mode. Workloads read
// their parameters from it, so one set of workloads serves the test suite
// (Tiny), the sanity check (Quick) and the record (Full). Workloads added
// elsewhere should scale with Mode the same way.
type Profile struct {
	Mode string // "tiny", "quick" or "full"

	// Every comparison runs each subject Reps times, interleaved.
	Reps int
	// Duration bounds one measured run of a Load; Warmup operations per
	// worker precede it.
	Duration time.Duration
	Warmup   int
	// RunBytes bounds the bytes one measured run moves, so large objects do
	// not fill the disk: a run does at most max(concurrency, RunBytes/size)
	// operations.
	RunBytes int64
	// CaseBytes bounds what one subject writes in one case over all its
	// runs (every run writes new objects, and our gateway reclaims space
	// only through garbage collection): cases whose runs would write more
	// run fewer times, but at least twice.
	CaseBytes int64
	// MaxOps, when positive, replaces that bound: every measured run of a
	// Load does at most MaxOps operations.
	MaxOps int

	// Cases are the PUT and GET cells: size x concurrency.
	Cases []Case
	// HeadConcurrency is the concurrency of HEAD, DELETE and mixed.
	HeadConcurrency int
	// ColdSize and ColdObjects: objects read once each after the page cache
	// was emptied.
	ColdSize    int64
	ColdObjects int

	// ListKeys is the size of the LIST workload's bucket, spread over
	// ListDirs common prefixes.
	ListKeys int
	ListDirs int
	// DeleteObjects is how many objects each DELETE run removes.
	DeleteObjects int

	// ScaleSizes are the branch sizes of the fork and list curves.
	ScaleSizes []int
	// GoFakeS3ListMax caps the list curve for gofakes3, whose backend walks
	// every file on each listing.
	GoFakeS3ListMax int
	// TreeSize is the fixed tree of the commit and diff curves over the
	// number of changes, and Changes their points.
	TreeSize int
	Changes  []int

	// CopySize is the object CopyObject copies.
	CopySize int64
	// Parts is how many parts (of PartSize, the S3 minimum 5 MiB) the
	// multipart completion joins; GoFakeS3Parts caps it for gofakes3, which
	// holds parts (and the joined object) in memory.
	Parts, GoFakeS3Parts int
	PartSize             int64

	// DedupSet is the data set uploaded to two branches; DedupLarge the
	// object edited by 1%.
	DedupSet, DedupLarge int64

	// MemorySize is the object streamed in and out of a separate server
	// process while its resident set is sampled.
	MemorySize int64

	// HashBytes is the buffer each hashing operation hashes.
	HashBytes int64

	// SoakDuration is how long each phase of the soak workload loads each
	// server (nas-bench --soak).
	SoakDuration time.Duration
	// SoakLarge is the object size of the soak's multipart phase.
	SoakLarge int64
	// SoakLargeOnly leaves out the soak's 4 KiB phase (nas-bench
	// --soak-large-only).
	SoakLargeOnly bool
}

// ProfileFor returns the profile of mode "tiny", "quick" or "full".
func ProfileFor(mode string) (Profile, error) {
	switch mode {
	case "tiny":
		return Profile{
			Mode: "tiny", Reps: 2, Duration: 50 * time.Millisecond, Warmup: 1, RunBytes: 2 << 20, CaseBytes: 64 << 20,
			Cases:           []Case{{4 << 10, 1}, {4 << 10, 4}, {1 << 20, 2}},
			HeadConcurrency: 2, ColdSize: 1 << 20, ColdObjects: 2,
			ListKeys: 200, ListDirs: 10, DeleteObjects: 20,
			ScaleSizes: []int{10, 100, 1000}, GoFakeS3ListMax: 1000, TreeSize: 1000, Changes: []int{1, 10, 100},
			CopySize: 8 << 20, Parts: 3, GoFakeS3Parts: 3, PartSize: 5 << 20,
			DedupSet: 4 << 20, DedupLarge: 8 << 20, MemorySize: 16 << 20, HashBytes: 64 << 10, SoakDuration: time.Second, SoakLarge: 8 << 20,
		}, nil
	case "quick":
		return Profile{
			Mode: "quick", Reps: 2, Duration: 100 * time.Millisecond, Warmup: 1, RunBytes: 128 << 20, CaseBytes: 1 << 30,
			Cases: []Case{
				{4 << 10, 1}, {4 << 10, 8}, {4 << 10, 32},
				{1 << 20, 1}, {1 << 20, 8},
				{64 << 20, 1},
			},
			HeadConcurrency: 8, ColdSize: 64 << 20, ColdObjects: 1,
			ListKeys: 2000, ListDirs: 20, DeleteObjects: 200,
			ScaleSizes: []int{10, 1000, 10000}, GoFakeS3ListMax: 10000, TreeSize: 10000, Changes: []int{1, 10, 100, 1000},
			CopySize: 64 << 20, Parts: 10, GoFakeS3Parts: 10, PartSize: 5 << 20,
			DedupSet: 32 << 20, DedupLarge: 64 << 20, MemorySize: 256 << 20, HashBytes: 1 << 20, SoakDuration: 10 * time.Second, SoakLarge: 64 << 20,
		}, nil
	case "full":
		var cases []Case
		for _, size := range []int64{4 << 10, 1 << 20, 64 << 20} {
			for _, c := range []int{1, 8, 32} {
				cases = append(cases, Case{size, c})
			}
		}
		return Profile{
			Mode: "full", Reps: 5, Duration: 2 * time.Second, Warmup: 2, RunBytes: 1 << 30, CaseBytes: 4 << 30,
			Cases:           cases,
			HeadConcurrency: 8, ColdSize: 64 << 20, ColdObjects: 4,
			ListKeys: 100000, ListDirs: 100, DeleteObjects: 2000,
			ScaleSizes: []int{10, 100, 1000, 10000, 100000, 1000000}, GoFakeS3ListMax: 100000,
			TreeSize: 100000, Changes: []int{1, 10, 100, 1000, 10000},
			CopySize: 1 << 30, Parts: 1000, GoFakeS3Parts: 200, PartSize: 5 << 20,
			DedupSet: 1 << 30, DedupLarge: 1 << 30, MemorySize: 4 << 30, HashBytes: 1 << 20, SoakDuration: 10 * time.Minute, SoakLarge: 64 << 20,
		}, nil
	}
	return Profile{}, fmt.Errorf("bench: unknown mode %q (tiny, quick or full)", mode)
}

// repsFor is how many runs a case gets whose runs each write up to
// runBytes.
func (p Profile) repsFor(runBytes int64) int {
	if p.CaseBytes <= 0 || runBytes <= 0 {
		return p.Reps
	}
	return min(p.Reps, max(2, int(p.CaseBytes/runBytes)))
}

// opsFor is the cap on measured operations of one run for objects of size
// at concurrency c.
func (p Profile) opsFor(size int64, c int) int {
	if p.MaxOps > 0 {
		return p.MaxOps
	}
	return max(c, int(p.RunBytes/max(size, 1)))
}
