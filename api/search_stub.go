// TEMPORARY: replaced by the search branch at merge.
//
// This file stands in for search/query's handler while it is written on
// another branch, so memory/recall can be built and tested against the
// same signature. It is a naive scan, not an index: nothing outside this
// file may depend on anything in it but searchQuery's signature, and the
// merge deletes it whole.

package api

import (
	"bytes"
	"context"
	"sort"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/outline"
)

// searchQuery (TEMPORARY stub) lists a.Prefix at the commit through the
// listing's view filter, reads each committed file the caller may read
// (uncharged, up to 1 MiB), and answers one hit per file holding any of
// the query's terms (case-insensitive substrings), scored by the number
// of distinct terms found, with its first matching line as the snippet.
func (h *Handler) searchQuery(ctx context.Context, c *call, a *apiv1.SearchQueryRequest) (*apiv1.SearchQueryResponse, error) {
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.List, a.Repo, br, ""); err != nil {
		return nil, err
	}
	at, err := h.commitAt(ctx, c, a.Repo, br, a.Commit)
	if err != nil {
		return nil, err
	}
	if at.IsZero() {
		b, err := h.b.GetBranch(ctx, a.Repo, br)
		if err != nil {
			return nil, err
		}
		at = b.Head
	}
	terms := strings.Fields(strings.ToLower(a.Query))
	if len(terms) == 0 || len(a.Query) > apiv1.MaxQueryBytes {
		return nil, invalid("query must hold a term and be at most 1024 bytes")
	}
	out := &apiv1.SearchQueryResponse{Commit: at.String(), Hits: []apiv1.SearchHit{},
		Index: apiv1.IndexInfo{Repo: a.Repo, Commit: at.String(), Recipe: apiv1.IndexRecipe{Indexer: "stub-scan", Version: "0"}}}
	err = h.stubScan(ctx, c, a, br, at, func(key string, data []byte) {
		if hit, ok := stubHit(a.Repo, key, at, data, terms); ok {
			out.Hits = append(out.Hits, hit)
		}
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out.Hits, func(i, j int) bool { return out.Hits[i].Score > out.Hits[j].Score })
	limit := a.Limit
	if limit <= 0 {
		limit = apiv1.DefaultSearchLimit
	}
	out.Hits = out.Hits[:min(len(out.Hits), limit, apiv1.MaxSearchLimit)]
	for _, hit := range out.Hits {
		out.Tokens += outline.Tokens(hit.Snippet)
	}
	return out, nil
}

// stubScan calls fn with each file under a.Prefix at commit at that the
// caller may list and read, quarantined notes left out unless asked for.
func (h *Handler) stubScan(ctx context.Context, c *call, a *apiv1.SearchQueryRequest, br string, at manifest.CommitID, fn func(string, []byte)) error {
	after := ""
	for {
		res, err := h.b.List(ctx, a.Repo, br, branch.ListOptions{Prefix: a.Prefix, After: after, MaxKeys: 1000, Filter: c.p.Filter(lease.List), At: at})
		if err != nil {
			return err
		}
		for _, o := range res.Objects {
			if !c.p.Visible(o.Key, lease.Read) || o.Entry.Size > 1<<20 ||
				!a.IncludeQuarantine && strings.Contains("/"+o.Key, "/memory/quarantine/") {
				continue
			}
			f := &file{t: auth.Target{Repo: a.Repo, Branch: br, Key: o.Key}, e: o.Entry, commit: at}
			if err := h.load(ctx, f); err != nil {
				return err
			}
			fn(o.Key, f.data)
		}
		if !res.Truncated {
			return nil
		}
		after = res.Next
	}
}

// stubHit is data's hit for terms, if any term is in it.
func stubHit(repo, key string, at manifest.CommitID, data []byte, terms []string) (apiv1.SearchHit, bool) {
	lower := bytes.ToLower(data)
	score, first := 0.0, ""
	for _, t := range terms {
		if bytes.Contains(lower, []byte(t)) {
			score++
			if first == "" {
				first = t
			}
		}
	}
	if score == 0 {
		return apiv1.SearchHit{}, false
	}
	lines := outline.NewLines(data)
	for i := 1; i <= lines.Count(); i++ {
		b, _ := lines.Slice(i, i)
		if bytes.Contains(bytes.ToLower(b), []byte(first)) {
			p := evidence.Pointer{Repo: repo, Path: key, Commit: at.String(), Start: i, End: i}
			return apiv1.SearchHit{Path: key, Score: score, Lines: apiv1.LineRange{StartLine: i, EndLine: i}, Snippet: string(b),
				Evidence: apiv1.Evidence{Pointer: p.String(), SHA256: evidence.Hash(b)}}, true
		}
	}
	return apiv1.SearchHit{}, false // a term that spans lines
}
