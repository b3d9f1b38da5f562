package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// TestReadAndEvidence: `nas read` in its views and `nas evidence`
// dereference and verify, each --json one snake_case document.
func TestReadAndEvidence(t *testing.T) {
	_, c := ownerCLI(t)
	body := "# Notes\nintro\n## Todo\n- one\n- two\n"
	jsonStep(t, exitOK, &apiv1.RepoResponse{}, "repo", "create", "readc", "--unprotected")
	if _, err := c.Put(context.Background(), nasclient.Object{Repo: "readc", Key: "n.md"}, strings.NewReader(body), int64(len(body)), nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	jsonStep(t, exitOK, &apiv1.CommitResponse{}, "commit", "readc", "main", "-m", "notes")
	var full, sec, lines, small apiv1.FileReadResponse
	jsonStep(t, exitOK, &full, "read", "readc", "n.md")
	jsonStep(t, exitOK, &sec, "read", "readc", "n.md", "--section", "Notes/Todo")
	jsonStep(t, exitOK, &lines, "read", "readc", "n.md", "--lines", "2-3", "--branch", "main")
	jsonStep(t, exitOK, &small, "read", "readc", "n.md", "--view", "full", "--budget", "8")
	if full.View != "full" || full.Content != body || sec.View != "section" || sec.Content != "## Todo\n- one\n- two\n" ||
		lines.Content != "intro\n## Todo\n" || small.View != "outline" || small.Tokens > 8 || !small.Truncated {
		t.Fatalf("views: %+v\n%+v\n%+v\n%+v", full, sec, lines, small)
	}
	if code, out := runCLI(t, "read", "readc", "n.md", "--lines", "2-3"); code != exitOK || out != "intro\n## Todo\n" {
		t.Fatalf("text read: %d %q", code, out)
	}
	ev := sec.Evidence[0]
	var d apiv1.FileDereferenceResponse
	jsonStep(t, exitOK, &d, "evidence", "dereference", ev.Pointer)
	if d.Content != sec.Content || d.SHA256 != ev.SHA256 {
		t.Fatalf("dereference: %+v", d)
	}
	var v apiv1.FileVerifyResponse
	jsonStep(t, exitOK, &v, "evidence", "verify", ev.Pointer, "--sha256", ev.SHA256)
	if !v.Valid {
		t.Fatalf("verify: %+v", v)
	}
	jsonStep(t, exitFailure, &v, "evidence", "verify", ev.Pointer, "--sha256", strings.Repeat("0", 64))
	if v.Valid || v.Reason == "" {
		t.Fatalf("verify of a wrong hash: %+v", v)
	}
	for _, args := range [][]string{{"read", "readc", "n.md", "--lines", "3-2"}, {"read", "readc", "n.md", "--lines", "1", "--section", "x"}, {"evidence", "verify", ev.Pointer}} {
		if code, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("nas %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
}
