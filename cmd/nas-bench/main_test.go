package main

import "testing"

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--list"}, exitOK},
		{[]string{"extra"}, exitUsage},
		{[]string{"--no-such-flag"}, exitUsage},
		{[]string{"--quick", "--full"}, exitUsage},
		{[]string{"--sizes", "-1", "--workloads", "put"}, exitUsage},
		{[]string{"--concurrency", "0", "--workloads", "put"}, exitUsage},
		{[]string{"--target", "nas", "--workloads", "no-such-workload"}, exitUsage},
		{[]string{"--from-json", "run.json", "--workloads", "put"}, exitUsage},
	} {
		if got := run(c.args); got != c.want {
			t.Errorf("nas-bench %q exits %d, want %d", c.args, got, c.want)
		}
	}
}
