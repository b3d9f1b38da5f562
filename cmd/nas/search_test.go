package main

import (
	"context"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
)

// TestSearchAndIndex: `nas search` prints snippets with pointers, and
// `nas index` rebuilds, lists and deletes the index.
func TestSearchAndIndex(t *testing.T) {
	_, c := ownerCLI(t)
	jsonStep(t, exitOK, &apiv1.RepoResponse{}, "repo", "create", "srch", "--unprotected")
	for k, v := range map[string]string{"a/notes.md": "# Notes\nthe renewal clause\n", "b/other.txt": "nothing here\n"} {
		if _, err := c.Put(context.Background(), nasclient.Object{Repo: "srch", Key: k}, strings.NewReader(v), int64(len(v)), nasclient.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	jsonStep(t, exitOK, &apiv1.CommitResponse{}, "commit", "srch", "main", "-m", "notes")
	var res apiv1.SearchQueryResponse
	jsonStep(t, exitOK, &res, "search", "srch@main", "renewal", "clause", "--prefix", "a/", "--limit", "5")
	if len(res.Hits) != 1 || res.Hits[0].Path != "a/notes.md" || res.Hits[0].Snippet != "# Notes\nthe renewal clause\n" {
		t.Fatalf("search: %+v", res)
	}
	if code, out := runCLI(t, "search", "srch", "renewal"); code != exitOK || !strings.Contains(out, "a/notes.md:1-2") ||
		!strings.Contains(out, "    the renewal clause\n") || !strings.Contains(out, "evidence "+res.Hits[0].Evidence.Pointer) {
		t.Fatalf("text search: %d %q", code, out)
	}
	var idx apiv1.IndexResponse
	jsonStep(t, exitOK, &idx, "index", "status", "srch")
	if len(idx.Indexes) != 1 || idx.Indexes[0].Files != 2 {
		t.Fatalf("status: %+v", idx)
	}
	jsonStep(t, exitOK, &apiv1.DeletedResponse{}, "index", "delete", "srch")
	jsonStep(t, exitOK, &idx, "index", "rebuild", "srch", "--branch", "main")
	if len(idx.Indexes) != 1 || idx.Indexes[0].Commit != res.Commit {
		t.Fatalf("rebuild: %+v", idx)
	}
	for _, args := range [][]string{{"search", "srch"}, {"index", "status"}} {
		if code, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("nas %s: exit %d, want %d", strings.Join(args, " "), code, exitUsage)
		}
	}
	if code, _ := runCLI(t, "search", "srch", `"unclosed`); code != exitUsage {
		t.Errorf("a bad query (InvalidArgument): exit %d", code)
	}
}
