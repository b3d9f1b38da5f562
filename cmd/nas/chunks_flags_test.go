package main

import "testing"

// TestMinFreeFlag: --min-free takes auto (the default floor, 0 in
// gateway.Config), a size, or 0 for no floor (negative in gateway.Config),
// and refuses anything else.
func TestMinFreeFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		show string
	}{
		{"auto", 0, "auto"},
		{"AUTO", 0, "auto"},
		{"0", -1, "0"},
		{"512MiB", 512 << 20, "512MiB"},
		{"2GB", 2e9, "2GB"},
	} {
		var f minFreeFlag
		if err := f.Set(tc.in); err != nil {
			t.Fatalf("Set(%q): %v", tc.in, err)
		}
		if f.v != tc.want || f.String() != tc.show {
			t.Errorf("Set(%q): %d shown %q, want %d shown %q", tc.in, f.v, f.String(), tc.want, tc.show)
		}
	}
	for _, bad := range []string{"", "-1", "lots", "1e400"} {
		var f minFreeFlag
		if err := f.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted: %d", bad, f.v)
		}
	}
	var f minFreeFlag
	if f.String() != "auto" || f.v != 0 {
		t.Errorf("unset: %d shown %q, want the default floor", f.v, f.String())
	}
}
