package bench

import (
	"runtime/debug"
	"testing"

	"github.com/agentnas/nas/gateway"
)

// TestChildMemoryGCPercent: a soak's child collects as nas serve does:
// NAS_GC_PERCENT, then GOGC, then gateway.DefaultGCPercent.
func TestChildMemoryGCPercent(t *testing.T) {
	prevLimit := debug.SetMemoryLimit(-1)
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev); debug.SetMemoryLimit(prevLimit) })
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{nil, gateway.DefaultGCPercent},
		{map[string]string{"GOGC": "200"}, 100}, // the runtime read GOGC itself; left alone
		{map[string]string{"GOGC": "200", "NAS_GC_PERCENT": "80"}, 80},
	} {
		debug.SetGCPercent(100)
		if _, err := childMemory(env(tc.env)); err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("%v: GC percent %d, want %d", tc.env, got, tc.want)
		}
	}
	for _, bad := range []string{"0", "-5", "fifty"} {
		if _, err := childMemory(env(map[string]string{"NAS_GC_PERCENT": bad})); err == nil {
			t.Errorf("NAS_GC_PERCENT=%s was accepted", bad)
		}
	}
}
