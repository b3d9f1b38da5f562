package api

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// Directory operations for file-system clients: a listing that carries
// each object's metadata (S3 listings do not), and a lookup that answers
// "is NAME a file, a directory, or nothing?" in one call. Both see only
// what the lease may list or read, like S3.

// EntryJSON describes one version of an object, without its chunk map.
type EntryJSON struct {
	Key         string            `json:"key"`
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"`
	VersionID   string            `json:"version_id"`
	ModTime     time.Time         `json:"mod_time"`
	ContentType string            `json:"content_type"`
	Meta        map[string]string `json:"meta,omitempty"`
}

func entryJSON(key string, e *manifest.Entry) EntryJSON {
	j := EntryJSON{Key: key, Size: e.Size, ETag: e.ETag, VersionID: e.VersionID,
		ModTime: time.Unix(0, e.ModTime).UTC(), ContentType: e.ContentType}
	for _, p := range e.Meta {
		if j.Meta == nil {
			j.Meta = map[string]string{}
		}
		j.Meta[p.Name] = p.Value
	}
	return j
}

// sortedMeta is user metadata in the canonical order entries keep.
func sortedMeta(m map[string]string) []manifest.Pair {
	var out []manifest.Pair
	for k, v := range m {
		out = append(out, manifest.Pair{Name: strings.ToLower(k), Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// maxListLimit bounds one page of object/list.
const maxListLimit = 10000

// objectList lists the objects and common prefixes under prefix, with
// their metadata, in key order: one page per call, resumed by cursor.
func (h *Handler) objectList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo      string `json:"repo"`
		Branch    string `json:"branch"`
		Prefix    string `json:"prefix"`
		Delimiter string `json:"delimiter"`
		Cursor    string `json:"cursor"`
		Limit     int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if err := h.authorize(ctx, c, lease.List, a.Repo, br, ""); err != nil {
		return nil, err
	}
	if a.Limit <= 0 || a.Limit > maxListLimit {
		a.Limit = 1000
	}
	if a.Cursor != "" && !strings.HasPrefix(a.Cursor, a.Prefix) {
		return nil, &Error{Status: 400, Code: "InvalidArgument", Message: "cursor is not under prefix"}
	}
	res, err := h.b.List(ctx, a.Repo, br, branch.ListOptions{Prefix: a.Prefix, Delimiter: a.Delimiter,
		After: a.Cursor, MaxKeys: a.Limit, Filter: c.p.Filter(lease.List)})
	if err != nil {
		return nil, err
	}
	objs := make([]EntryJSON, 0, len(res.Objects))
	for _, o := range res.Objects {
		objs = append(objs, entryJSON(o.Key, o.Entry))
	}
	out := map[string]any{"objects": objs, "prefixes": append([]string{}, res.CommonPrefixes...)}
	if res.Truncated {
		out["next_cursor"] = res.Next
	}
	return out, nil
}

// objectLookup says what key names on a branch: the object stored under
// it, and whether it is a directory (a marker object key+"/" or any key
// under key+"/" the lease may list). An object the lease may neither
// read nor list is absent, as in a listing.
func (h *Handler) objectLookup(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		Branch string `json:"branch"`
		Key    string `json:"key"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	if a.Key == "" || strings.HasSuffix(a.Key, "/") {
		return nil, &Error{Status: 400, Code: "InvalidArgument", Message: "key must be a non-empty name without a trailing /"}
	}
	out := map[string]any{"object": nil, "dir": false, "marker": false}
	get := func(key string) (*manifest.Entry, error) {
		if !c.p.Visible(key, lease.List, lease.Read) {
			return nil, nil
		}
		e, err := h.b.Get(ctx, a.Repo, br, key)
		if errors.Is(err, branch.ErrNoSuchKey) {
			return nil, nil
		}
		return e, err
	}
	e, err := get(a.Key)
	if err != nil {
		return nil, err
	}
	if e != nil {
		out["object"] = entryJSON(a.Key, e)
	}
	m, err := get(a.Key + "/")
	if err != nil {
		return nil, err
	}
	if m != nil {
		out["dir"], out["marker"] = true, true
		return out, nil
	}
	if !c.p.Grants(lease.List) {
		return out, nil
	}
	res, err := h.b.List(ctx, a.Repo, br, branch.ListOptions{Prefix: a.Key + "/", Delimiter: "/", MaxKeys: 1,
		Filter: c.p.Filter(lease.List)})
	if err != nil {
		return nil, err
	}
	out["dir"] = len(res.Objects) > 0 || len(res.CommonPrefixes) > 0
	return out, nil
}
