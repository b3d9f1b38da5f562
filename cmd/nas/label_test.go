package main

import (
	"os"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
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
