package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentnas/nas/apiv1"
)

// searchTool is nas_search: full-text search of the branch's last
// commit (search/query), read-only.
var searchTool = &mcp.Tool{Name: "nas_search", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	Description: fmt.Sprintf("Full-text search of the files at the branch's last commit: the best matching files, best first, "+
		"each as a snippet of a few lines with its evidence pointer nas://REPO/PATH@COMMIT#Lx-Ly and the SHA-256 of those lines; "+
		"never whole files (use nas_read for more). Words match any of them; \"quoted phrases\" must match as written. "+
		"Only files the lease may read are searched; each snippet is charged to the read budget. "+
		"At most %d hits (default %d); quarantined notes (memory/quarantine/) only with include_quarantine.",
		apiv1.MaxSearchLimit, apiv1.DefaultSearchLimit)}

// SearchInput is nas_search's input.
type SearchInput struct {
	Query             string `json:"query" jsonschema:"words to find; a \"quoted phrase\" must match as written"`
	Prefix            string `json:"prefix,omitempty" jsonschema:"search only files under this path"`
	Limit             int    `json:"limit,omitempty" jsonschema:"most hits to answer (default 10, at most 100)"`
	IncludeQuarantine bool   `json:"include_quarantine,omitempty" jsonschema:"also search quarantined notes (memory/quarantine/)"`
}

func (t *tools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, apiv1.SearchQueryResponse, error) {
	out, err := t.c.Search(ctx, apiv1.SearchQueryRequest{Repo: t.repo, Branch: t.branch, Query: in.Query, Prefix: key(in.Prefix),
		Limit: in.Limit, IncludeQuarantine: in.IncludeQuarantine})
	if err != nil {
		return nil, apiv1.SearchQueryResponse{}, refusal("search "+in.Query, err)
	}
	if out.Hits == nil {
		out.Hits = []apiv1.SearchHit{}
	}
	return nil, *out, nil
}
