package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// TestLabelCLI: `nas label set` adds and replaces rules, `list` prints
// them in order, `rm` removes one; a bad label is refused.
func TestLabelCLI(t *testing.T) {
	ownerCLI(t)
	jsonStep(t, exitOK, &apiv1.RepoResponse{}, "repo", "create", "lbl", "--unprotected")
	var out apiv1.LabelRulesResponse
	jsonStep(t, exitOK, &out, "label", "set", "lbl", "imports/**", "--origin", "external")
	jsonStep(t, exitOK, &out, "label", "set", "lbl", "keys/*", "--sensitivity", "secret")
	jsonStep(t, exitOK, &out, "label", "set", "lbl", "imports/**", "--origin", "external", "--reviewed")
	if len(out.Rules) != 2 || out.Rules[0] != (apiv1.LabelRule{Glob: "imports/**", Origin: "external", Reviewed: true}) {
		t.Fatalf("rules: %+v", out.Rules)
	}
	if code, text := runCLI(t, "label", "list", "lbl"); code != exitOK || text != "imports/** origin=external reviewed\nkeys/* sensitivity=secret\n" {
		t.Fatalf("list: %d %q", code, text)
	}
	jsonStep(t, exitOK, &out, "label", "rm", "lbl", "keys/*")
	if len(out.Rules) != 1 {
		t.Fatalf("after rm: %+v", out.Rules)
	}
	schema := t.TempDir() + "/s.json"
	if err := os.WriteFile(schema, []byte(`{"type": "object", "properties": {"ok": {"type": "boolean"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var hs apiv1.HandoffsResponse
	jsonStep(t, exitOK, &hs, "handoff", "set", "lbl", "out/*.json", schema)
	if len(hs.Handoffs) != 1 || hs.Handoffs[0].Glob != "out/*.json" {
		t.Fatalf("handoff set: %+v", hs)
	}
	jsonStep(t, exitOK, &hs, "handoff", "rm", "lbl", "out/*.json")
	if len(hs.Handoffs) != 0 {
		t.Fatalf("handoff rm: %+v", hs)
	}
	if code, _ := runCLI(t, "handoff", "set", "lbl", "x", "/nonexistent.json"); code != exitUsage {
		t.Errorf("a missing schema file: exit %d", code)
	}
	for _, args := range [][]string{{"label", "set", "lbl", "x/**", "--origin", "web"}, {"label", "set", "lbl", "x/**"}, {"label", "list", "nope"}} {
		if code, _ := runCLI(t, args...); code != exitFailure {
			t.Errorf("nas %s: exit %d, want %d", strings.Join(args, " "), code, exitFailure)
		}
	}
}

// TestForgetCLI: `nas hold` blocks `nas forget` (exit 1); lifted, a dry
// run and then the forget write forget-report.json.
func TestForgetCLI(t *testing.T) {
	_, c := ownerCLI(t)
	jsonStep(t, exitOK, &apiv1.RepoResponse{}, "repo", "create", "fgc", "--unprotected")
	if _, err := c.Put(context.Background(), nasclient.Object{Repo: "fgc", Key: "crm/a.md"}, strings.NewReader("x"), 1, nasclient.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	jsonStep(t, exitOK, &apiv1.CommitResponse{}, "commit", "fgc", "main", "-m", "crm")
	jsonStep(t, exitOK, &apiv1.HoldsResponse{}, "hold", "set", "fgc", "crm/**", "--reason", "case 9")
	if code, _ := runCLI(t, "forget", "fgc", "--paths", "crm/a.md"); code != exitFailure {
		t.Fatalf("forget under a hold: exit %d", code)
	}
	jsonStep(t, exitOK, &apiv1.HoldsResponse{}, "hold", "rm", "fgc", "crm/**")
	out := t.TempDir() + "/forget-report.json"
	if code, text := runCLI(t, "forget", "fgc", "--paths", "crm/a.md", "--dry-run"); code != exitOK || !strings.Contains(text, "would forget 1 file(s)") {
		t.Fatalf("dry run: %d %q", code, text)
	}
	if code, text := runCLI(t, "forget", "fgc", "--paths", "crm/a.md", "--out", out); code != exitOK || !strings.Contains(text, "not covered: model weights") {
		t.Fatalf("forget: %d %q", code, text)
	}
	var rep apiv1.ForgetReport
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.Report.FilesRemoved != 1 {
		t.Fatalf("forget-report.json: %s %v", b, err)
	}
	if code, _ := runCLI(t, "forget", "fgc"); code != exitUsage {
		t.Errorf("forget without --paths: exit %d", code)
	}
}
