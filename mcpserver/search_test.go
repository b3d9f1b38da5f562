package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/lease"
)

// TestSearchTool: nas_search through the SDK's client finds what the
// lease may read, never the hidden secret/, with pointers that verify;
// bad queries and a spent budget answer their codes.
func TestSearchTool(t *testing.T) {
	w := newWorld(t)
	l := w.lease(t, "search", lease.Budgets{BytesRead: 1 << 20})
	cs := w.session(t, l)
	var out apiv1.SearchQueryResponse
	if msg := call(t, cs, "nas_search", map[string]any{"query": "never shown"}, &out); msg != "" || len(out.Hits) != 0 {
		t.Fatalf("words only secret/ holds: %+v %s", out.Hits, msg)
	}
	if msg := call(t, cs, "nas_search", map[string]any{"query": "install", "prefix": "/docs/", "limit": 5}, &out); msg != "" {
		t.Fatal(msg)
	}
	if len(out.Hits) != 1 || out.Hits[0].Path != "docs/guide.md" || !strings.Contains(out.Hits[0].Snippet, "Install.") || out.Commit == "" {
		t.Fatalf("install: %+v", out)
	}
	ev := out.Hits[0].Evidence
	var v apiv1.FileVerifyResponse
	w.do(t, apiv1.FileVerifyRequest(ev), &v)
	if !v.Valid {
		t.Fatalf("the hit's pointer does not verify: %+v", v)
	}
	wantRefused(t, cs, "InvalidArgument", "nas_search", map[string]any{"query": `"unclosed`})
	tiny := w.session(t, w.lease(t, "tiny-search", lease.Budgets{BytesRead: 2}))
	wantRefused(t, tiny, "QuotaExceeded", "nas_search", map[string]any{"query": "install"})
}
