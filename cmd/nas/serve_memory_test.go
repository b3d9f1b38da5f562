package main

import (
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv"
)

func TestServeMemoryFlags(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	prevGC := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(prev); debug.SetGCPercent(prevGC) })
	log := slog.New(slog.DiscardHandler)
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	parse := func(args ...string) *memoryFlags {
		var o memoryFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		o.add(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &o
	}

	var c gateway.Config
	debug.SetMemoryLimit(prev)
	if err := parse().apply(&c, env(nil), log); err != nil {
		t.Fatal(err)
	}
	if want, _ := kv.BadgerSizingFor(kv.DefaultBadgerMemory); c.KV != want {
		t.Errorf("default sizing %+v, want %+v", c.KV, want)
	}
	if got := debug.SetMemoryLimit(-1); got != gateway.DefaultMemoryLimit {
		t.Errorf("default memory limit %d, want %d", got, gateway.DefaultMemoryLimit)
	}
	if got := debug.SetGCPercent(100); got != gateway.DefaultGCPercent {
		t.Errorf("default GC percent %d, want %d", got, gateway.DefaultGCPercent)
	}

	debug.SetMemoryLimit(prev)
	o := parse("--memory-limit", "512MiB", "--kv-memory", "256MiB", "--gc-percent", "80")
	o.limitSet, o.gcSet = true, true
	if err := o.apply(&c, env(map[string]string{"GOMEMLIMIT": "2GiB", "GOGC": "200"}), log); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetGCPercent(100); got != 80 {
		t.Errorf("explicit --gc-percent 80 over GOGC=200 set %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 512<<20 {
		t.Errorf("explicit --memory-limit 512MiB set %d", got)
	}
	if c.KV.MemTableSize != 16<<20 {
		t.Errorf("--kv-memory 256MiB: memtable %d, want 16 MiB", c.KV.MemTableSize)
	}

	debug.SetMemoryLimit(prev)
	if err := parse().apply(&c, env(map[string]string{"GOMEMLIMIT": "2GiB", "GOGC": "200"}), log); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("the default overrode GOMEMLIMIT: limit %d", got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("the default overrode GOGC: GC percent %d", got)
	}
	if err := parse("--gc-percent", "0").apply(&c, env(nil), log); err == nil {
		t.Error("--gc-percent 0 was accepted")
	}

	if err := parse("--kv-memory", "16MiB").apply(&c, env(nil), log); err == nil {
		t.Error("--kv-memory 16MiB was accepted")
	}
}
