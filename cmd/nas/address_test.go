package main

import (
	"testing"

	"github.com/agentnas/nas/branch"
	nasclient "github.com/agentnas/nas/client"
)

func TestParseAddress(t *testing.T) {
	remote := func(repo, br, key string) address {
		return address{obj: nasclient.Object{Repo: repo, Branch: br, Key: key}}
	}
	local := func(p string) address { return address{local: p} }
	for _, tc := range []struct {
		in         string
		remoteOnly bool
		want       address
		usage      bool
	}{
		{in: "data/a/b.txt", want: remote("data", "", "a/b.txt")},
		{in: "data/", want: remote("data", "", "")},
		{in: "data@dev/x", want: remote("data", "dev", "x")},
		{in: "data@cleo/run-1/dir/f", want: remote("data", "cleo", "run-1/dir/f")},
		{in: "data@cleo/run-1:/dir/f", want: remote("data", "cleo/run-1", "dir/f")},
		{in: "data@cleo/run-1:", want: remote("data", "cleo/run-1", "")},
		{in: "data@main/logs/12:30", want: remote("data", "main", "logs/12:30")},
		{in: "data/a//../b", want: remote("data", "", "a//../b")},
		{in: "nas://data", want: remote("data", "", "")},
		{in: "nas://data@cleo/run-1:/k", want: remote("data", "cleo/run-1", "k")},
		{in: "data", remoteOnly: true, want: remote("data", "", "")},
		{in: "data@dev", remoteOnly: true, want: remote("data", "dev", "")},
		{in: "data", want: local("data")},
		{in: "data.csv", want: local("data.csv")},
		{in: "data@dev", want: local("data@dev")},
		{in: "./data/x", want: local("./data/x")},
		{in: "/abs/path", want: local("/abs/path")},
		{in: "Photos/x", want: local("Photos/x")},
		{in: "my_dir/x", want: local("my_dir/x")},
		{in: ".", want: local(".")},
		{in: "./data/x", remoteOnly: true, usage: true},
		{in: "", usage: true},
		{in: "nas://X/y", usage: true},
		{in: "data@/x", usage: true},
		{in: "data@Bad/x", usage: true},
		{in: "data@cleo//x", want: remote("data", "cleo", "/x")},
	} {
		got, err := parseAddress(tc.in, tc.remoteOnly)
		if tc.usage {
			if _, ok := err.(usageError); !ok {
				t.Errorf("parseAddress(%q, %v) = %+v, %v; want a usage error", tc.in, tc.remoteOnly, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseAddress(%q, %v) = %+v, %v; want %+v", tc.in, tc.remoteOnly, got, err, tc.want)
		}
	}
}

// FuzzParseAddress: no input panics the parser, and whatever it accepts
// it writes back (String) in a form that parses to the same address, in
// either mode.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"data/a/b", "data@dev/x", "data@cleo/run-1:/k:v", "data@a:", "nas://data",
		"./x", "/abs", "data", "data@x:y", "nas://data@a/b:/c", "a.b-c@d_e.f/g"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, remoteOnly bool) {
		a, err := parseAddress(s, remoteOnly)
		if err != nil {
			return
		}
		if remoteOnly && a.isLocal() {
			t.Fatalf("%q: a local path where only gateway addresses are taken", s)
		}
		for _, mode := range []bool{false, !a.isLocal()} {
			back, err := parseAddress(a.String(), mode)
			if err != nil || back != a {
				t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, a, a.String(), back, err)
			}
		}
	})
}

// FuzzAddressString: every repository, branch and key the gateway accepts
// has a written form that parses back to it.
func FuzzAddressString(f *testing.F) {
	f.Add("data", "", "a/b")
	f.Add("data", "cleo/run-1", "x:/y")
	f.Add("data", "dev", "k:")
	f.Add("d.b", "a_b", "")
	f.Fuzz(func(t *testing.T, repo, br, key string) {
		a := address{obj: nasclient.Object{Repo: repo, Branch: br, Key: key}}
		if branch.ValidRepoName(repo) != nil || br != "" && branch.ValidBranchName(br) != nil {
			return
		}
		back, err := parseAddress(a.String(), false)
		if err != nil || back != a {
			t.Fatalf("%+v -> %q -> %+v, %v", a, a.String(), back, err)
		}
	})
}
