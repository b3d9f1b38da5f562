package api

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// Listings and lookups for file systems: what a lease cannot see is left
// out, as in S3 listings.

// sortedMeta is user metadata in the canonical order entries keep.
func sortedMeta(m map[string]string) []manifest.Pair {
	var out []manifest.Pair
	for k, v := range m {
		out = append(out, manifest.Pair{Name: strings.ToLower(k), Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// objectList lists the objects and common prefixes under prefix, with
// their metadata, in key order: one page per call, resumed by cursor.
func (h *Handler) objectList(ctx context.Context, c *call, a *apiv1.ObjectListRequest) (*apiv1.ObjectListResponse, error) {
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
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	if a.Cursor != "" && !strings.HasPrefix(a.Cursor, a.Prefix) {
		return nil, invalid("cursor is not under prefix")
	}
	res, err := h.b.List(ctx, a.Repo, br, branch.ListOptions{Prefix: a.Prefix, Delimiter: a.Delimiter,
		After: a.Cursor, MaxKeys: limit, Filter: h.auth.ListFilter(ctx, c.p, a.Repo, lease.List), At: at})
	if err != nil {
		return nil, err
	}
	out := &apiv1.ObjectListResponse{Objects: make([]apiv1.Object, 0, len(res.Objects)), Prefixes: append([]string{}, res.CommonPrefixes...)}
	for _, o := range res.Objects {
		j := objectOut(o.Key, o.Entry)
		j.Labels = h.labelsOut(ctx, c, a.Repo, o.Key, o.Entry)
		out.Objects = append(out.Objects, j)
	}
	if res.Truncated {
		out.NextCursor = res.Next
	}
	return out, nil
}

// objectLookup says what key names on a branch: the object stored under
// it, and whether it is a directory (a marker object key+"/" or any key
// under key+"/" the lease may list). An object the lease may neither
// read nor list is absent, as in a listing.
func (h *Handler) objectLookup(ctx context.Context, c *call, a *apiv1.ObjectLookupRequest) (*apiv1.ObjectLookupResponse, error) {
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if a.Key == "" || strings.HasSuffix(a.Key, "/") {
		return nil, invalid("key must be a non-empty name without a trailing /")
	}
	at, err := h.commitAt(ctx, c, a.Repo, br, a.Commit)
	if err != nil {
		return nil, err
	}
	get := func(key string) (*manifest.Entry, error) {
		if !c.p.Visible(key, lease.List, lease.Read) {
			return nil, nil
		}
		e, err := h.entryAt(ctx, a.Repo, br, key, a.Commit)
		if errors.Is(err, branch.ErrNoSuchKey) || err == nil && !h.auth.Admits(ctx, c.p, a.Repo, key, e) {
			return nil, nil
		}
		return e, err
	}
	out := &apiv1.ObjectLookupResponse{}
	e, err := get(a.Key)
	if err != nil {
		return nil, err
	}
	if e != nil {
		o := objectOut(a.Key, e)
		o.Labels = h.labelsOut(ctx, c, a.Repo, a.Key, e)
		out.Object = &o
	}
	m, err := get(a.Key + "/")
	if err != nil {
		return nil, err
	}
	if m != nil {
		out.Dir, out.Marker = true, true
		return out, nil
	}
	if !c.p.Grants(lease.List) {
		return out, nil
	}
	res, err := h.b.List(ctx, a.Repo, br, branch.ListOptions{Prefix: a.Key + "/", Delimiter: "/", MaxKeys: 1,
		Filter: h.auth.ListFilter(ctx, c.p, a.Repo, lease.List), At: at})
	if err != nil {
		return nil, err
	}
	out.Dir = len(res.Objects) > 0 || len(res.CommonPrefixes) > 0
	return out, nil
}

// objectTouched tells which keys of a branch changed since a cursor (the
// mount follows it to keep what it knows for long). A lease hears only of
// keys it may list or read by path and, if its sensitivity ceiling can
// hide keys by their labels, only of keys it could see: a key written
// above its ceiling turns the answer into All (so a name it saw and can
// no longer see is not kept, and a hidden one never leaks), a key
// deleted is named if the version before the delete was admitted.
func (h *Handler) objectTouched(ctx context.Context, c *call, a *apiv1.ObjectTouchedRequest) (*apiv1.ObjectTouchedResponse, error) {
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.List, a.Repo, br, ""); err != nil {
		return nil, err
	}
	t, err := h.b.TouchedSince(ctx, a.Repo, br, a.Cursor)
	if err != nil {
		return nil, err
	}
	out := &apiv1.ObjectTouchedResponse{Cursor: t.Cursor, All: t.All, Coherent: t.Coherent, Keys: []apiv1.TouchedKey{}}
	labelled := c.p.Lease != nil && label.Above(label.Secret, c.p.Lease.SensitivityMax)
	for _, k := range t.Keys {
		if !c.p.Visible(k.Key, lease.List, lease.Read) {
			continue
		}
		if labelled {
			e, deleted, err := h.seenEntry(ctx, a.Repo, br, k)
			if err != nil {
				return nil, err
			}
			admitted := e != nil && h.auth.Admits(ctx, c.p, a.Repo, k.Key, e)
			if deleted && !admitted {
				continue // the lease never saw what was deleted
			}
			if !admitted {
				out.All, out.Keys = true, []apiv1.TouchedKey{}
				break
			}
		}
		out.Keys = append(out.Keys, apiv1.TouchedKey{Key: k.Key, VersionID: k.VersionID, Deleted: k.Deleted})
	}
	return out, nil
}

// seenEntry is the entry by which a changed key's visibility is judged:
// its current one, or for a deleted key (deleted) the version before the
// delete (nil when there was none, or it was itself a delete).
func (h *Handler) seenEntry(ctx context.Context, repo, br string, k branch.TouchedKey) (e *manifest.Entry, deleted bool, err error) {
	e, err = h.b.Get(ctx, repo, br, k.Key)
	if err == nil || !errors.Is(err, branch.ErrNoSuchKey) {
		return e, false, err
	}
	res, err := h.b.ListVersions(ctx, repo, br, branch.VersionListOptions{Prefix: k.Key, MaxKeys: 2})
	if err != nil {
		return nil, true, err
	}
	vs := res.Versions
	if len(vs) < 2 || vs[0].Key != k.Key || vs[1].Key != k.Key || !vs[0].DeleteMarker {
		return nil, true, nil
	}
	return vs[1].Entry, true, nil
}

// commitAt parses the commit a listing or lookup reads at ("": the
// branch's current state); a lease must have seen it.
func (h *Handler) commitAt(ctx context.Context, c *call, repo, br, commit string) (manifest.CommitID, error) {
	if commit == "" {
		return manifest.CommitID{}, nil
	}
	id, err := manifest.ParseCommitID(commit)
	if err != nil {
		return id, invalid("commit must be a commit ID")
	}
	return id, h.auth.Authorize(ctx, c.p, lease.List, auth.Target{Repo: repo, Branch: br, Commit: commit})
}
