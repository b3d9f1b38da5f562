package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/nastest"
)

// TestCLISourcePrefetch: prefetch a folder source and read its status,
// both --json documents decoded strictly; a changed file is named, not
// fatal.
func TestCLISourcePrefetch(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	dir := t.TempDir()
	files := map[string]int{"small.txt": 100, "mid.bin": 300 << 10, "big.bin": 9<<20 + 3, "drifts.txt": 10}
	var size int64
	for name, n := range files {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
		size += int64(n)
	}
	if code, out := runCLI(t, "repo", "create", "kbase"); code != 0 {
		t.Fatalf("repo create: %d %s", code, out)
	}
	code, out := runCLI(t, "source", "add", "kbase", "dir:"+dir, "--prefix", "docs/")
	if code != 0 {
		t.Fatalf("source add: %d %s", code, out)
	}
	id := strings.Fields(out)[3]

	var st apiv1.SourceStatusResponse
	jsonStep(t, 0, &st, "source", "status", "kbase", id)
	if s := st.Status; !s.Scanned || s.Entries != 4 || s.Bytes != size || s.LocalBytes != 0 || s.Prefetch != nil {
		t.Fatalf("status before: %+v", s)
	}
	var p apiv1.SourcePrefetchResponse
	jsonStep(t, 0, &p, "source", "prefetch", "kbase", id, "--parallel", "2", "--rate", "1GiB")
	if j := p.Prefetch; j.State != "done" || j.FetchedBytes != size || j.FetchedEntries != 4 || j.BytesPerSecond != 1<<30 || j.Parallel != 2 {
		t.Fatalf("prefetch: %+v", j)
	}
	st = apiv1.SourceStatusResponse{}
	jsonStep(t, 0, &st, "source", "status", "kbase", id)
	if s := st.Status; s.LocalBytes != size || s.LocalEntries != 4 || s.Prefetch == nil || s.Prefetch.State != "done" {
		t.Fatalf("status after: %+v", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "drifts.txt"), []byte("changed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out := runCLI(t, "source", "refresh", "kbase", id); code != 0 {
		t.Fatalf("refresh: %d %s", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "drifts.txt"), []byte("changed again"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"source", "prefetch", "kbase", id}, 0, "1 changed at the remote (docs/drifts.txt"},
		{[]string{"source", "status", "kbase", id}, 0, "of 4 objects\tprefetch done"},
		{[]string{"source", "prefetch", "kbase", id, "--detach"}, 0, "in the background"},
		{[]string{"source", "prefetch", "other", id}, 2, ""},
		{[]string{"source", "status", "other", id}, 2, ""},
		{[]string{"source", "prefetch", "kbase", id, "--parallel", "0"}, 2, ""},
		{[]string{"source", "prefetch", "kbase", id, "--rate", "fast"}, 2, ""},
		{[]string{"source", "prefetch", "kbase", id, "--detach", "--cancel"}, 2, ""},
		{[]string{"source", "status", "kbase"}, 2, ""},
		{[]string{"source", "prefetch", "kbase", "src_nope"}, 1, ""},
	}
	for _, s := range steps {
		code, out := runCLI(t, s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("nas %s: exit %d, output %q; want exit %d containing %q", strings.Join(s.args, " "), code, out, s.code, s.want)
		}
	}
	p = apiv1.SourcePrefetchResponse{}
	jsonStep(t, 0, &p, "source", "prefetch", "kbase", id, "--cancel")
	if p.Prefetch.State == "running" {
		t.Fatalf("cancel answered a running job: %+v", p.Prefetch)
	}
}

// TestPrefetchOutcome: a job that did not finish exits 1, and says how to
// resume it.
func TestPrefetchOutcome(t *testing.T) {
	for state, fails := range map[string]bool{"done": false, "running": false, "failed": true, "cancelled": true, "interrupted": true} {
		err := prefetchOutcome(&apiv1.SourcePrefetch{Source: "src_1", State: state, Error: "why"}, "kbase")
		if (err != nil) != fails || fails && !strings.Contains(err.Error(), "nas source prefetch kbase src_1") {
			t.Errorf("%s: %v", state, err)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 9<<20 + 3: "9.0 MiB", 3 << 40: "3.0 TiB"} {
		if got := sourceBytes(n); got != want {
			t.Errorf("sourceBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
