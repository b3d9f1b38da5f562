package pgtest

import "testing"

// TestFreePortAvoidsTheEphemeralRange: the port a cluster gets is one the
// kernel does not hand out by itself, so nothing takes it while the
// cluster is down between Stop and Restart.
func TestFreePortAvoidsTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo <= portFloor+100 {
		t.Skipf("ephemeral range starts at %d: no room below it", lo)
	}
	for range 20 {
		p, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		if p < portFloor || p >= lo {
			t.Fatalf("port %d: want one in [%d, %d)", p, portFloor, lo)
		}
	}
}
