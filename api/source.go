package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/source"
)

// Control-API verbs of attached (lazy) sources. All are owner operations:
// a lease can neither attach a source (which would let it point the
// gateway at any endpoint) nor see one's location; no verb ever returns a
// source's credentials.
//
//	source/add      {repo, branch, prefix, url, endpoint, region, access_key,
//	                 secret_key, session_token, virtual_host, wait}
//	source/get      {id}
//	source/list     {repo, cursor, limit}
//	source/refresh  {id, wait}
//	source/remove   {id, evict}
//
// Each answers {"source": ...} (list: {"sources": [...], "next_cursor"}).
// Attach and refresh run in the background; without "wait" they answer at
// once and source/get shows their progress.

// sourceRoutes returns the source verbs before SetSources: they answer
// that sources are not enabled.
func (h *Handler) sourceRoutes() map[string]verb {
	return sourceVerbs(nil)
}

// SetSources enables the source verbs with r, and teaches object/stat
// about lazy entries. Call it before serving.
func (h *Handler) SetSources(r *source.Registry) {
	h.lazy = r.Materializer()
	for name, v := range sourceVerbs(r) {
		h.verbs[name] = v
	}
	if stat, ok := h.verbs["object/stat"]; ok {
		inner := stat.fn
		stat.fn = func(ctx context.Context, c *call) (any, error) {
			out, err := inner(ctx, c)
			if errors.Is(err, manifest.ErrLazy) {
				return h.lazyStat(ctx, c, r.Materializer())
			}
			return out, err
		}
		h.verbs["object/stat"] = stat
	}
}

// lazyStat is object/stat for a lazy entry: the object is made local
// (fetched from its source if it is not yet) so the answer carries a chunk
// map like any other object's. It authorizes and records as object/stat.
func (h *Handler) lazyStat(ctx context.Context, c *call, m *source.Materializer) (any, error) {
	var a statArgs
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	t := auth.Target{Repo: a.Repo, Branch: br, Key: a.Key}
	if err := h.auth.Probe(ctx, c.p, t); err != nil {
		return nil, err
	}
	e, err := h.entryAt(ctx, a.Repo, br, a.Key, a.VersionID)
	if err != nil {
		return nil, err
	}
	refs, err := m.ChunkMap(ctx, e)
	if err != nil {
		return nil, lazyError(err)
	}
	b, err := h.b.GetBranch(ctx, a.Repo, br)
	if err != nil {
		return nil, err
	}
	st := statOf(a.Key, e, b.Head.String(), refs)
	if _, err := h.auth.Read(ctx, c.p, t, e); err != nil {
		return nil, err
	}
	out := map[string]any{"object": st}
	if err := h.inline(ctx, c, a, br, e, refs, out); err != nil {
		return nil, err
	}
	return out, nil
}

// lazyError translates a failure to materialise for a reader of the
// object, who may be a lease: the message names neither the remote nor
// its credentials.
func lazyError(err error) error {
	switch {
	case errors.Is(err, source.ErrChanged):
		return &Error{Status: http.StatusConflict, Code: "RemoteObjectChanged",
			Message: "the object's source no longer holds the version this branch pinned; the owner can run `nas source refresh`"}
	case errors.Is(err, source.ErrRemoved):
		return &Error{Status: http.StatusConflict, Code: "RemoteSourceRemoved",
			Message: "the object's source was detached before the object was read"}
	case errors.Is(err, source.ErrThrottled):
		return &Error{Status: http.StatusServiceUnavailable, Code: "SlowDown", Retryable: true,
			Message: "the object's source is throttling the gateway"}
	case errors.Is(err, source.ErrUnavailable), errors.Is(err, source.ErrCorrupt):
		return &Error{Status: http.StatusServiceUnavailable, Code: "ServiceUnavailable", Retryable: true,
			Message: "the object's source could not be read; nothing was stored"}
	}
	return err
}

func sourceVerbs(r *source.Registry) map[string]verb {
	s := sourceHandler{r: r}
	return map[string]verb{
		"source/add":     {write: true, fn: s.add},
		"source/get":     {fn: s.get},
		"source/list":    {fn: s.list},
		"source/refresh": {write: true, fn: s.refresh},
		"source/remove":  {write: true, fn: s.remove},
	}
}

type sourceHandler struct{ r *source.Registry }

// ready refuses on a gateway without sources (the verbs are the owner's:
// the route table keeps leases out).
func (s sourceHandler) ready(c *call, op string) error {
	if s.r == nil {
		return &Error{Status: http.StatusNotImplemented, Code: "NotImplemented", Message: "sources are not enabled on this gateway"}
	}
	return nil
}

// sourceError translates the source package's errors for these verbs;
// anything else goes on to the API's table.
func sourceError(err error) error {
	mk := func(status int, code string, retry bool) error {
		return &Error{Status: status, Code: code, Message: err.Error(), Retryable: retry}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, source.ErrInvalid):
		return mk(http.StatusBadRequest, "InvalidArgument", false)
	case errors.Is(err, source.ErrNotFound):
		return mk(http.StatusNotFound, "NotFound", false)
	case errors.Is(err, source.ErrConflict):
		return mk(http.StatusConflict, "Conflict", false)
	case errors.Is(err, source.ErrDenied):
		return mk(http.StatusBadRequest, "RemoteAccessDenied", false)
	case errors.Is(err, source.ErrThrottled):
		return mk(http.StatusServiceUnavailable, "SlowDown", true)
	case errors.Is(err, source.ErrUnavailable), errors.Is(err, source.ErrChanged):
		return mk(http.StatusServiceUnavailable, "RemoteUnavailable", true)
	}
	return err
}

// infoAfter waits for the job of id when asked to, and answers.
func (s sourceHandler) infoAfter(ctx context.Context, id string, wait bool, info *source.Info) (any, error) {
	if wait {
		var err error
		if info, err = s.r.Wait(ctx, id); err != nil {
			if info == nil {
				return nil, sourceError(err)
			}
			return nil, &Error{Status: http.StatusConflict, Code: "SourceSyncFailed", Message: err.Error(),
				Details: map[string]any{"source": info}}
		}
	}
	return map[string]any{"source": info}, nil
}

func (s sourceHandler) add(ctx context.Context, c *call) (any, error) {
	if err := s.ready(c, "source/add"); err != nil {
		return nil, err
	}
	var a struct {
		Repo         string `json:"repo"`
		Branch       string `json:"branch"`
		Prefix       string `json:"prefix"`
		URL          string `json:"url"`
		Endpoint     string `json:"endpoint"`
		Region       string `json:"region"`
		AccessKey    string `json:"access_key"`
		SecretKey    string `json:"secret_key"`
		SessionToken string `json:"session_token"`
		VirtualHost  bool   `json:"virtual_host"`
		Wait         bool   `json:"wait"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "url", a.URL); err != nil {
		return nil, err
	}
	info, err := s.r.Add(ctx, source.Spec{Repo: a.Repo, Branch: a.Branch, Prefix: a.Prefix, URL: a.URL,
		Endpoint: a.Endpoint, Region: a.Region, AccessKey: a.AccessKey, SecretKey: a.SecretKey,
		SessionToken: a.SessionToken, VirtualHost: a.VirtualHost, Principal: c.p.AccessKey})
	if err != nil {
		return nil, sourceError(err)
	}
	return s.infoAfter(ctx, info.ID, a.Wait, info)
}

type sourceIDArg struct {
	ID string `json:"id"`
}

func (s sourceHandler) get(ctx context.Context, c *call) (any, error) {
	if err := s.ready(c, "source/get"); err != nil {
		return nil, err
	}
	var a sourceIDArg
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	info, err := s.r.Get(ctx, a.ID)
	if err != nil {
		return nil, sourceError(err)
	}
	return map[string]any{"source": info}, nil
}

func (s sourceHandler) list(ctx context.Context, c *call) (any, error) {
	if err := s.ready(c, "source/list"); err != nil {
		return nil, err
	}
	var a struct {
		Repo   string `json:"repo"`
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	infos, err := s.r.List(ctx, a.Repo)
	if err != nil {
		return nil, sourceError(err)
	}
	out, next := pageOf(infos, a.Cursor, limit, func(i *source.Info) string { return i.ID }, func(i *source.Info) source.Info { return *i })
	return map[string]any{"sources": out, "next_cursor": next}, nil
}

func (s sourceHandler) refresh(ctx context.Context, c *call) (any, error) {
	if err := s.ready(c, "source/refresh"); err != nil {
		return nil, err
	}
	var a struct {
		ID   string `json:"id"`
		Wait bool   `json:"wait"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	info, err := s.r.Refresh(ctx, a.ID, c.p.AccessKey)
	if err != nil {
		return nil, sourceError(err)
	}
	return s.infoAfter(ctx, a.ID, a.Wait, info)
}

func (s sourceHandler) remove(ctx context.Context, c *call) (any, error) {
	if err := s.ready(c, "source/remove"); err != nil {
		return nil, err
	}
	var a struct {
		ID    string `json:"id"`
		Evict bool   `json:"evict"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	info, err := s.r.Remove(ctx, a.ID, a.Evict)
	if err != nil {
		return nil, sourceError(err)
	}
	return map[string]any{"removed": a.ID, "source": info}, nil
}

// contentOf returns what an entry's bytes are made of. A lazy entry (of an
// attached source) is made local first, fetching what is not, so stat and
// compose work on it like on any other object.
func (h *Handler) contentOf(ctx context.Context, e *manifest.Entry) (*manifest.Content, error) {
	c, err := h.b.Manifest().Content(ctx, e)
	if !errors.Is(err, manifest.ErrLazy) || h.lazy == nil {
		return c, err
	}
	refs, err := h.lazy.ChunkMap(ctx, e)
	if err != nil {
		return nil, lazyError(err)
	}
	return &manifest.Content{Chunks: refs}, nil
}
