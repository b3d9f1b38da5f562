package main

import (
	"log/slog"
	"runtime"
)

// procsForDirectWrites is the GOMAXPROCS a gateway with --direct-writes
// runs with: twice the runtime's own choice (the CPUs it may use), unless
// $GOMAXPROCS set it. A direct write blocks its thread in the kernel for
// as long as the disk takes (milliseconds for a MiB here), and the
// goroutine keeps its P (the runtime's right to run Go code) until the
// scheduler's monitor notices and hands the P on: with one P per core,
// eight uploads' writes left a third of a core idle while hashing work
// waited (bench/RESULTS.md, "Direct writes with more Ps than cores").
// With twice as many Ps, the other uploads hash while some write.
// It returns 0 when nothing is to change.
func procsForDirectWrites(direct bool, getenv func(string) string, current int) int {
	if !direct || getenv("GOMAXPROCS") != "" {
		return 0
	}
	return 2 * current
}

// applyProcs raises GOMAXPROCS for direct writes (procsForDirectWrites).
func applyProcs(direct bool, getenv func(string) string, log *slog.Logger) {
	if n := procsForDirectWrites(direct, getenv, runtime.GOMAXPROCS(0)); n > 0 {
		runtime.GOMAXPROCS(n)
		log.Debug("direct writes: more Ps than CPUs", "gomaxprocs", n, "cpus", runtime.NumCPU())
	}
}
