package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/source"
)

// Control-API verbs of attached (lazy) sources. All are owner operations:
// a lease can neither attach a source (which would let it point the
// gateway at any endpoint) nor see one's location; no verb ever returns a
// source's credentials. Attach and refresh run in the background; without
// "wait" they answer at once and source/get shows their progress.

// sourceRoutes adds the source verbs; before SetSources they answer that
// sources are not enabled.
func (h *Handler) sourceRoutes(m map[string]verb) {
	s := &sourceHandler{h: h}
	route(m, writes, s.add)
	route(m, owner, s.get)
	route(m, owner, s.list)
	route(m, writes, s.refresh)
	route(m, writes, s.remove)
	route(m, writes, s.prefetch)
	route(m, writes, s.push)
	route(m, writes|leases, s.pushRequest)
	route(m, owner, s.status)
}

// SetSources enables the source verbs with r, and lets object/stat and
// compose read lazy entries. Call it before serving.
func (h *Handler) SetSources(r *source.Registry) {
	h.lazy, h.sources = r.Materializer(), r
}

type sourceHandler struct{ h *Handler }

// registry is the registry, or the answer that there is none.
func (s *sourceHandler) registry() (*source.Registry, error) {
	if s.h.sources == nil {
		return nil, &Error{Status: http.StatusNotImplemented, Code: apiv1.CodeNotImplemented, Message: "sources are not enabled on this gateway"}
	}
	return s.h.sources, nil
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
		return mk(http.StatusBadRequest, apiv1.CodeInvalidArgument, false)
	case errors.Is(err, source.ErrNotFound):
		return mk(http.StatusNotFound, apiv1.CodeNotFound, false)
	case errors.Is(err, source.ErrConflict):
		return mk(http.StatusConflict, apiv1.CodeConflict, false)
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
func infoAfter(ctx context.Context, r *source.Registry, id string, wait bool, info *source.Info) (*apiv1.SourceResponse, error) {
	if wait {
		var err error
		if info, err = r.Wait(ctx, id); err != nil {
			if info == nil {
				return nil, sourceError(err)
			}
			return nil, &Error{Status: http.StatusConflict, Code: "SourceSyncFailed", Message: err.Error(),
				Details: map[string]any{"source": sourceOut(info)}}
		}
	}
	return &apiv1.SourceResponse{Source: sourceOut(info)}, nil
}

func (s *sourceHandler) add(ctx context.Context, c *call, a *apiv1.SourceAddRequest) (*apiv1.SourceResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "url", a.URL); err != nil {
		return nil, err
	}
	info, err := r.Add(ctx, source.Spec{Repo: a.Repo, Branch: a.Branch, Prefix: a.Prefix, URL: a.URL,
		Endpoint: a.Endpoint, Region: a.Region, AccessKey: a.AccessKey, SecretKey: a.SecretKey,
		SessionToken: a.SessionToken, VirtualHost: a.VirtualHost, Principal: c.p.AccessKey, WithMetadata: a.WithMetadata, Args: a.Args})
	if err != nil {
		return nil, sourceError(err)
	}
	return infoAfter(ctx, r, info.ID, a.Wait, info)
}

func (s *sourceHandler) get(ctx context.Context, c *call, a *apiv1.SourceGetRequest) (*apiv1.SourceResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	info, err := r.Get(ctx, a.ID)
	if err != nil {
		return nil, sourceError(err)
	}
	return &apiv1.SourceResponse{Source: sourceOut(info)}, nil
}

func (s *sourceHandler) list(ctx context.Context, c *call, a *apiv1.SourceListRequest) (*apiv1.SourceListResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	infos, err := r.List(ctx, a.Repo)
	if err != nil {
		return nil, sourceError(err)
	}
	out, next := pageOf(infos, a.Cursor, limit, func(i *source.Info) string { return i.ID }, sourceOut)
	return &apiv1.SourceListResponse{Sources: out, NextCursor: next}, nil
}

func (s *sourceHandler) refresh(ctx context.Context, c *call, a *apiv1.SourceRefreshRequest) (*apiv1.SourceResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	info, err := r.Refresh(ctx, a.ID, c.p.AccessKey)
	if err != nil {
		return nil, sourceError(err)
	}
	return infoAfter(ctx, r, a.ID, a.Wait, info)
}

func (s *sourceHandler) remove(ctx context.Context, c *call, a *apiv1.SourceRemoveRequest) (*apiv1.SourceRemoveResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	info, err := r.Remove(ctx, a.ID, a.Evict)
	if err != nil {
		return nil, sourceError(err)
	}
	return &apiv1.SourceRemoveResponse{Removed: a.ID, Source: sourceOut(info)}, nil
}

// statContent is e's content for an object/stat answer: nil for a lazy
// entry not all local that the answer will not inline, which the client
// then reads by range (a chunk map would mean fetching all of it).
func (h *Handler) statContent(ctx context.Context, e *manifest.Entry, inlineMax int64) (*manifest.Content, error) {
	if !e.Lazy() || h.lazy == nil || (inlineMax > 0 && e.Size <= min(inlineMax, apiv1.MaxInline)) {
		return h.contentOf(ctx, e)
	}
	refs, local, err := h.lazy.LocalMap(ctx, e)
	if err != nil || !local {
		return nil, lazyError(err)
	}
	return &manifest.Content{Chunks: refs}, nil
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

// push writes a branch's changes back to an S3 source. The plan (a dry
// run) is recorded first, with the keys it would write; a push whose
// record cannot be written does not happen.
func (s *sourceHandler) push(ctx context.Context, c *call, a *apiv1.SourcePushRequest) (*apiv1.SourcePushResponse, error) {
	r, err := s.registry()
	if err != nil {
		return nil, err
	}
	if err := required("id", a.ID); err != nil {
		return nil, err
	}
	if err := required("from", a.From); err != nil {
		return nil, err
	}
	o := source.PushOptions{From: a.From, Paths: a.Paths, DryRun: true, Principal: c.p.AccessKey}
	if a.DryRun {
		plan, err := r.Push(ctx, a.ID, o)
		return pushOut(plan), sourceError(err)
	}
	rep, err := s.runPush(ctx, c, a.ID, o)
	return pushOut(rep), sourceError(err)
}

// runPush pushes o of attachment id (the plan must have digest o.Expect
// when set), recording the plan before the first write.
func (s *sourceHandler) runPush(ctx context.Context, c *call, id string, o source.PushOptions) (*source.PushReport, error) {
	r := s.h.sources
	info, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	o.DryRun = false
	o.Before = func(plan *source.PushReport) error {
		n, keys := 0, ""
		for _, x := range plan.Actions {
			if x.Result != "would write" {
				continue
			}
			if n++; len(keys) < pushKeysRecorded {
				keys += x.Op + " " + strconv.Quote(x.Key) + " "
			}
		}
		ev := record.Event{Kind: record.KindSourcePush, Repo: info.Repo, Branch: o.From, Subject: record.Subject{Path: info.Prefix},
			Details: map[string]string{"source": id, "count": strconv.Itoa(n), "keys": strings.TrimSpace(keys), "digest": plan.Digest}}
		return s.h.record(ctx, c, ev)
	}
	return r.Push(ctx, id, o)
}

// pushKeysRecorded bounds the bytes of keys a push's record names (the
// first ones; a record's field holds 16 KiB, and a key 1 KiB).
const pushKeysRecorded = 4 << 10

// pushOut is a push report on the wire.
func pushOut(r *source.PushReport) *apiv1.SourcePushResponse {
	if r == nil {
		return nil
	}
	out := &apiv1.SourcePushResponse{Source: r.Source, From: r.From, DryRun: r.DryRun, Actions: []apiv1.SourcePushAction{},
		Written: r.Written, Conflicts: r.Conflicts, Commit: r.Commit, Digest: r.Digest}
	for _, x := range r.Actions {
		out.Actions = append(out.Actions, apiv1.SourcePushAction(x))
	}
	return out
}
