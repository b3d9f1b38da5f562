package main

import "testing"

func TestProcsForDirectWrites(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMAXPROCS" {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name   string
		direct bool
		env    string
		want   int
	}{
		{"page cache: the runtime's choice", false, "", 0},
		{"direct writes: twice it", true, "", 4},
		{"direct writes, $GOMAXPROCS set: the operator's", true, "3", 0},
	} {
		if got := procsForDirectWrites(tc.direct, env(tc.env), 2); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
