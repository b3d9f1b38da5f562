package main

import (
	"log/slog"
	"runtime/debug"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/agentnas/nas/bytesize"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv"
)

// memoryFlags bound the gateway's memory: --kv-memory is the embedded
// store's budget (split by kv.BadgerSizingFor), --memory-limit the Go
// runtime's soft limit (debug.SetMemoryLimit), past which the garbage
// collector runs harder instead of letting the heap grow, and
// --gc-percent how far the heap may grow past its live data before a
// collection (debug.SetGCPercent, GOGC). Not one flag per Badger knob:
// the split is documented in package kv, and the Go API
// (gateway.Config.KV) sets each knob for whoever needs to.
type memoryFlags struct {
	kvMemory  mibFlag
	limit     mibFlag
	gcPercent int
	// limitSet and gcSet say the operator gave --memory-limit or
	// --gc-percent (or their variables): then they win over GOMEMLIMIT
	// and GOGC, which win over the defaults.
	limitSet, gcSet bool
}

// mibFlag is a byte-count flag that shows its value in MiB (the defaults
// in --help and the README read 128MiB, not 134217728).
type mibFlag struct{ bytesize.Flag }

// String returns the value in MiB when it is a whole number of them.
func (f *mibFlag) String() string {
	if f.V%(1<<20) == 0 && f.V != 0 {
		return strconv.FormatInt(f.V>>20, 10) + "MiB"
	}
	return f.Flag.String()
}

// add defines the flags on f.
func (o *memoryFlags) add(f *pflag.FlagSet) {
	o.kvMemory.V = kv.DefaultBadgerMemory
	o.limit.V = gateway.DefaultMemoryLimit
	f.Var(&o.kvMemory, "kv-memory", "memory budget of the embedded metadata store (Badger memtables, caches, table builders; at least 64MiB; see README, Memory)")
	f.Var(&o.limit, "memory-limit", "soft limit of the gateway's Go heap: past it garbage is collected sooner (0: none, or $GOMEMLIMIT when set)")
	f.IntVar(&o.gcPercent, "gc-percent", gateway.DefaultGCPercent, "how far, in percent, the Go heap may grow past its live data before garbage is collected (GOGC; $GOGC wins over the default when set)")
}

// apply sets the store's sizing on c and the runtime's memory limit and
// collection target. A limit of 0 leaves the runtime's own (off, or
// $GOMEMLIMIT), and so does the default when GOMEMLIMIT is set: an
// operator's explicit GOMEMLIMIT wins over our default, not over an
// explicit --memory-limit; GOGC and --gc-percent likewise.
func (o *memoryFlags) apply(c *gateway.Config, getenv func(string) string, log *slog.Logger) error {
	sz, err := kv.BadgerSizingFor(o.kvMemory.V)
	if err != nil {
		return usagef("--kv-memory: %w", err)
	}
	if o.gcPercent < 1 {
		return usagef("--gc-percent %d: want at least 1 (GOGC=off turns collection off)", o.gcPercent)
	}
	c.KV = sz
	if o.gcSet || getenv("GOGC") == "" {
		debug.SetGCPercent(o.gcPercent)
	}
	if o.limit.V == 0 || (!o.limitSet && getenv("GOMEMLIMIT") != "") {
		return nil
	}
	debug.SetMemoryLimit(o.limit.V)
	log.Debug("memory", "limit", o.limit.V, "gc_percent", o.gcPercent, "kv_budget", o.kvMemory.V, "kv_ceiling", sz.Ceiling())
	return nil
}
