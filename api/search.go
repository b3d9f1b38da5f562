package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/outline"
	"github.com/agentnas/nas/search"
)

// Full-text search (search/query) and its index (index/*). A search is
// a read through the door like files/read: the caller needs read on the
// repository and branch, a lease names only commits its branch has
// seen, hits are only of keys its view lets it read (the others are
// left out, as in a listing: nothing is refused or recorded for them),
// and each snippet's bytes are charged to its read budget and recorded
// in its read manifest as a ranged read at the commit searched.

// SetSearch enables search/query and index/* with s. Call it before
// serving.
func (h *Handler) SetSearch(s *search.Service) { h.search = s }

// searchOff is the answer of the search verbs before SetSearch.
var searchOff = &Error{Status: http.StatusNotImplemented, Code: apiv1.CodeNotImplemented, Message: "full-text search is not enabled on this gateway"}

// checkSearch checks a query's text and applies the search limits.
func checkSearch(a *apiv1.SearchQueryRequest) (int, error) {
	switch {
	case strings.TrimSpace(a.Query) == "":
		return 0, invalid("query is required")
	case len(a.Query) > apiv1.MaxQueryBytes:
		return 0, invalid(fmt.Sprintf("query is %d bytes; at most %d", len(a.Query), apiv1.MaxQueryBytes))
	case a.Limit < 0:
		return 0, invalid("limit must be positive")
	case a.Limit == 0:
		return apiv1.DefaultSearchLimit, nil
	}
	return min(a.Limit, apiv1.MaxSearchLimit), nil
}

// searchQuery answers search/query: the best hits of the commit, each a
// snippet with its evidence pointer, charged as it is answered. A hit
// the budget does not cover ends the answer; when not even the first
// is covered the answer is the budget error.
func (h *Handler) searchQuery(ctx context.Context, c *call, a *apiv1.SearchQueryRequest) (*apiv1.SearchQueryResponse, error) {
	if h.search == nil {
		return nil, searchOff
	}
	limit, err := checkSearch(a)
	if err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.Read, a.Repo, br, ""); err != nil {
		return nil, err
	}
	at, err := h.searchCommit(ctx, c, a.Repo, br, a.Commit)
	if err != nil {
		return nil, err
	}
	hits, info, err := h.search.Search(ctx, search.Query{Repo: a.Repo, Branch: br, Commit: at, Text: a.Query, Prefix: a.Prefix,
		Filter: c.p.Filter(lease.Read), IncludeQuarantine: a.IncludeQuarantine, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &apiv1.SearchQueryResponse{Commit: at.String(), Hits: []apiv1.SearchHit{}, Index: indexOut(info)}
	for _, hit := range hits {
		if !h.auth.Admits(ctx, c.p, a.Repo, hit.Key, hit.Entry) {
			continue // above the lease's ceiling: for it the file does not exist
		}
		sh, err := h.searchHit(ctx, c, auth.Target{Repo: a.Repo, Branch: br, Key: hit.Key, Commit: at.String()}, hit)
		switch {
		case errors.Is(err, auth.ErrOverBudget) && len(out.Hits) > 0:
			return out, nil
		case errors.Is(err, auth.ErrNotFound):
			continue // a grant used up under the query: the key is gone from the view
		case err != nil:
			return nil, err
		}
		out.Hits = append(out.Hits, sh)
		out.Tokens += outline.Tokens(sh.Snippet)
	}
	return out, nil
}

// searchCommit is the commit a search reads: commit, which the caller's
// branch must have seen (the door checks a lease's, the branch the
// owner's), else br's last one.
func (h *Handler) searchCommit(ctx context.Context, c *call, repo, br, commit string) (manifest.CommitID, error) {
	if commit == "" {
		b, err := h.b.GetBranch(ctx, repo, br)
		if err != nil {
			return manifest.CommitID{}, err
		}
		return b.Head, nil
	}
	id, err := manifest.ParseCommitID(commit)
	if err != nil && c.p.IsOwner() {
		return id, invalid("commit must be a commit ID")
	}
	if err := h.auth.Authorize(ctx, c.p, lease.Read, auth.Target{Repo: repo, Branch: br, Commit: commit}); err != nil {
		return id, err
	}
	if ok, err := h.b.Sees(ctx, repo, br, id); err != nil || !ok {
		return id, errors.Join(err, fmt.Errorf("%s/%s has not seen commit %s: %w", repo, br, commit, branch.ErrNoSuchVersion))
	}
	return id, nil
}

// searchHit authorizes, charges and records one hit's snippet as a
// ranged read of t, and makes its evidence pointer.
func (h *Handler) searchHit(ctx context.Context, c *call, t auth.Target, hit search.Hit) (apiv1.SearchHit, error) {
	if err := h.auth.Authorize(ctx, c.p, lease.Read, t); err != nil {
		return apiv1.SearchHit{}, err
	}
	if _, err := h.auth.Read(ctx, c.p, t, hit.Entry, auth.Range{Off: hit.Off, Len: int64(len(hit.Snippet))}); err != nil {
		return apiv1.SearchHit{}, err
	}
	p := evidence.Pointer{Repo: t.Repo, Path: t.Key, Commit: t.Commit, Start: hit.Start, End: hit.End}
	return apiv1.SearchHit{Path: hit.Key, Score: hit.Score, Lines: apiv1.LineRange{StartLine: hit.Start, EndLine: hit.End},
		Snippet: string(hit.Snippet), Evidence: apiv1.Evidence{Pointer: p.String(), SHA256: evidence.Hash(hit.Lines)}}, nil
}

// indexOut is an index as the contract shows it.
func indexOut(i search.Info) apiv1.IndexInfo {
	return apiv1.IndexInfo{Repo: i.Repo, Commit: i.Commit, Recipe: apiv1.IndexRecipe{Indexer: i.Recipe.Indexer, Version: i.Recipe.Version,
		Settings: i.Recipe.Settings}, Files: i.Files, Skipped: i.Skipped, Bytes: i.Bytes, BuiltAt: i.BuiltAt.Format(time.RFC3339Nano),
		BuildSecs: i.Build.Seconds()}
}

// indexBranch is the branch an index verb names, and its last commit.
func (h *Handler) indexBranch(ctx context.Context, repo, br string) (string, manifest.CommitID, error) {
	if err := required("repo", repo); err != nil {
		return "", manifest.CommitID{}, err
	}
	if br == "" {
		br = branch.DefaultBranch
	}
	b, err := h.b.GetBranch(ctx, repo, br)
	if err != nil {
		return "", manifest.CommitID{}, err
	}
	return br, b.Head, nil
}

// indexRebuild answers index/rebuild: the repository's index deleted
// and built anew at the branch's last commit.
func (h *Handler) indexRebuild(ctx context.Context, c *call, a *apiv1.IndexRebuildRequest) (*apiv1.IndexResponse, error) {
	if h.search == nil {
		return nil, searchOff
	}
	br, head, err := h.indexBranch(ctx, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	info, err := h.search.Rebuild(ctx, a.Repo, br, head)
	if err != nil {
		return nil, err
	}
	return &apiv1.IndexResponse{Indexes: []apiv1.IndexInfo{indexOut(info)}}, nil
}

// indexStatus answers index/status: the commits the repository's index
// covers, newest first.
func (h *Handler) indexStatus(ctx context.Context, c *call, a *apiv1.IndexStatusRequest) (*apiv1.IndexResponse, error) {
	if h.search == nil {
		return nil, searchOff
	}
	if _, _, err := h.indexBranch(ctx, a.Repo, a.Branch); err != nil {
		return nil, err
	}
	infos, err := h.search.Status(a.Repo)
	if err != nil {
		return nil, err
	}
	out := &apiv1.IndexResponse{Indexes: make([]apiv1.IndexInfo, 0, len(infos))}
	for _, i := range infos {
		out.Indexes = append(out.Indexes, indexOut(i))
	}
	return out, nil
}

// indexDelete answers index/delete: the repository's index is removed;
// the next search builds it again.
func (h *Handler) indexDelete(ctx context.Context, c *call, a *apiv1.IndexDeleteRequest) (*apiv1.DeletedResponse, error) {
	if h.search == nil {
		return nil, searchOff
	}
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	if err := h.search.Delete(a.Repo); err != nil {
		return nil, err
	}
	return &apiv1.DeletedResponse{Deleted: a.Repo}, nil
}
