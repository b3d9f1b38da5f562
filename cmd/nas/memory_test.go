package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// TestRememberRecallCLI: `nas remember` writes notes, `nas recall`
// prints them with their marks, and `nas recall test` passes (twice with
// --rebuild) or fails with exit 1 naming the note it missed.
func TestRememberRecallCLI(t *testing.T) {
	_, c := ownerCLI(t)
	jsonStep(t, exitOK, &apiv1.RepoResponse{}, "repo", "create", "mem", "--unprotected")
	var old, cur apiv1.MemoryRememberResponse
	jsonStep(t, exitOK, &old, "remember", "mem", "--home", "agents/ops", "--kind", "semantic", "--subject", "deploy", "The", "window", "is", "Tuesday.")
	jsonStep(t, exitOK, &cur, "remember", "mem@main", "--home", "agents/ops", "--kind", "semantic", "--subject", "deploy",
		"--supersedes", old.Note.ID, "--confidence", "0.9", "The window is Friday.")
	if cur.Note.Body != "The window is Friday.\n" || cur.Note.Confidence != 0.9 || cur.Note.Supersedes[0] != old.Note.ID {
		t.Fatalf("remember: %+v", cur)
	}
	if code, out := runCLI(t, "recall", "mem", "window", "--home", "agents/ops", "--include-superseded"); code != exitOK ||
		!strings.Contains(out, cur.Note.ID+" semantic deploy") || !strings.Contains(out, "superseded by "+cur.Note.ID) ||
		!strings.Contains(out, "    The window is Friday.\n") || !strings.Contains(out, "evidence nas://mem/agents/ops/memory/notes/") {
		t.Fatalf("recall: %d %q", code, out)
	}
	var rec apiv1.MemoryRecallResponse
	jsonStep(t, exitOK, &rec, "recall", "mem", "window", "--home", "agents/ops")
	if len(rec.Notes) != 1 || rec.Notes[0].ID != cur.Note.ID {
		t.Fatalf("recall hides the superseded note: %+v", rec)
	}
	putTests := func(yaml string) {
		if _, err := c.Put(context.Background(), nasclient.Object{Repo: "mem", Key: "agents/ops/recall-tests.yaml"}, strings.NewReader(yaml),
			int64(len(yaml)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		jsonStep(t, exitOK, &apiv1.CommitResponse{}, "commit", "mem", "main", "-m", "recall tests")
	}
	putTests(fmt.Sprintf("- query: deploy window\n  expect: [%s]\n  top_k: 1\n", cur.Note.ID))
	if code, out := runCLI(t, "recall", "test", "mem", "--home", "agents/ops", "--rebuild"); code != exitOK ||
		strings.Count(out, `ok    "deploy window"`) != 2 || !strings.Contains(out, "after rebuilding the index:") {
		t.Fatalf("recall test: %d %q", code, out)
	}
	putTests(fmt.Sprintf("- query: Tuesday\n  expect: [%s]\n", old.Note.ID))
	if code, out := runCLI(t, "recall", "test", "mem", "--home", "agents/ops"); code != exitFailure ||
		!strings.Contains(out, `FAIL  "Tuesday": missing `+old.Note.ID) || !strings.Contains(out, "0 passed, 1 failed") {
		t.Fatalf("failing recall test: %d %q", code, out)
	}
	for _, args := range [][]string{{"remember", "mem"}, {"recall", "mem"}, {"recall", "test"}} {
		if code, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("nas %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
	if code, _ := runCLI(t, "remember", "mem", "--kind", "semantic", "--subject", "s", "x"); code != exitFailure {
		t.Errorf("the owner naming no Home (InvalidArgument): exit %d", code)
	}
}

// TestNoteBody: words join into one line; "-" reads standard input, up
// to the bound.
func TestNoteBody(t *testing.T) {
	if b, err := noteBody([]string{"a", "b"}, nil); err != nil || b != "a b\n" {
		t.Fatalf("%q %v", b, err)
	}
	if b, err := noteBody([]string{"-"}, strings.NewReader("line 1\nline 2\n")); err != nil || b != "line 1\nline 2\n" {
		t.Fatalf("%q %v", b, err)
	}
	if _, err := noteBody([]string{"-"}, strings.NewReader(strings.Repeat("x", maxNoteBody+1))); err == nil {
		t.Fatal("an oversized body on standard input was accepted")
	}
}
