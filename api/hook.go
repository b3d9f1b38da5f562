package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/hook"
)

// SetHooks enables the hook verbs with s.
func (h *Handler) SetHooks(s *hook.Store) { h.hooks = s }

// hookRoutes adds the hook verbs (the owner's).
func (h *Handler) hookRoutes(m map[string]verb) {
	route(m, writes, h.hookAdd)
	route(m, owner, h.hookList)
	route(m, writes, h.hookRemove)
	route(m, owner, h.hookDeliveries)
}

func (h *Handler) needHooks() error {
	if h.hooks == nil {
		return &Error{Status: http.StatusNotImplemented, Code: apiv1.CodeNotImplemented, Message: "webhooks are not enabled on this gateway"}
	}
	return nil
}

// hookError translates the store's errors.
func hookError(err error) error {
	switch {
	case errors.Is(err, hook.ErrInvalid):
		return invalid(err.Error())
	case errors.Is(err, hook.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: apiv1.CodeNotFound, Message: err.Error()}
	}
	return err
}

func hookOut(x *hook.Hook, secret bool) apiv1.Hook {
	out := apiv1.Hook{ID: x.ID, Repo: x.Repo, URL: x.URL, Events: x.Events, Created: x.Created, Cursor: x.Cursor,
		Failures: x.Failures, NextTry: x.NextTry}
	if secret {
		out.Secret = x.Secret
	}
	return out
}

func (h *Handler) hookAdd(ctx context.Context, c *call, a *apiv1.HookAddRequest) (*apiv1.HookResponse, error) {
	if err := h.needHooks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "url", a.URL); err != nil {
		return nil, err
	}
	if _, err := h.b.GetRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	x, err := h.hooks.Add(ctx, a.Repo, a.URL, a.Events)
	if err != nil {
		return nil, hookError(err)
	}
	return &apiv1.HookResponse{Hook: hookOut(x, true)}, nil
}

func (h *Handler) hookList(ctx context.Context, c *call, a *apiv1.HookListRequest) (*apiv1.HookListResponse, error) {
	if err := h.needHooks(); err != nil {
		return nil, err
	}
	hs, err := h.hooks.List(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	out := &apiv1.HookListResponse{Hooks: []apiv1.Hook{}}
	for i := range hs {
		out.Hooks = append(out.Hooks, hookOut(&hs[i], false))
	}
	return out, nil
}

func (h *Handler) hookRemove(ctx context.Context, c *call, a *apiv1.HookRemoveRequest) (*apiv1.HookResponse, error) {
	if err := h.needHooks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "id", a.ID); err != nil {
		return nil, err
	}
	if err := h.hooks.Remove(ctx, a.Repo, a.ID); err != nil {
		return nil, hookError(err)
	}
	return &apiv1.HookResponse{Hook: apiv1.Hook{ID: a.ID, Repo: a.Repo, Events: []string{}}}, nil
}

func (h *Handler) hookDeliveries(ctx context.Context, c *call, a *apiv1.HookDeliveriesRequest) (*apiv1.HookDeliveriesResponse, error) {
	if err := h.needHooks(); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "id", a.ID); err != nil {
		return nil, err
	}
	ds, err := h.hooks.Deliveries(ctx, a.Repo, a.ID)
	if err != nil {
		return nil, hookError(err)
	}
	out := &apiv1.HookDeliveriesResponse{Deliveries: []apiv1.HookDelivery{}}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, apiv1.HookDelivery{Seq: d.Seq, Event: d.Event, Attempt: d.Attempt, Time: d.Time,
			Status: d.Status, Error: d.Error, DurationMS: d.Duration})
	}
	return out, nil
}
