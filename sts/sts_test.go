package sts

import "testing"

func TestRoleName(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:iam::000000000000:role/cleo":        "cleo",
		"arn:aws:iam::123456789012:role/agents/cleo": "cleo",
		"arn:aws:iam::000000000000:user/cleo":        "",
		"arn:aws:s3:::bucket":                        "",
		"cleo":                                       "",
		"arn:aws:iam::000000000000:role/":            "",
	} {
		got, err := roleName(arn)
		if (err == nil) != (want != "") || got != want {
			t.Errorf("roleName(%q) = %q, %v; want %q", arn, got, err, want)
		}
	}
}

func TestSessionAndBranch(t *testing.T) {
	for s, ok := range map[string]bool{"run-91ab": true, "a": false, "Run@Example.com": true, "has space": false, "x/y": false} {
		if err := validSession(s); (err == nil) != ok {
			t.Errorf("validSession(%q): %v", s, err)
		}
	}
	if got := branchSegment("run-91ab"); got != "run-91ab" {
		t.Errorf("a valid name is kept: %q", got)
	}
	seen := map[string]string{}
	for _, run := range []string{"job-7", "JOB-7", "job@7", "job+7", "Job=7", "_x", "r_x", "A+B=C", "a-b-c"} {
		seg := branchSegment(run)
		if other, dup := seen[seg]; dup {
			t.Errorf("%q and %q share branch segment %q", run, other, seg)
		}
		seen[seg] = run
	}
}
