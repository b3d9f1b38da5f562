package api

import (
	"context"
	"errors"
	"strconv"

	"github.com/agentnas/nas/record"
)

func (h *Handler) needRecorder(c *call, op string) error {
	if h.rec == nil {
		return notFound("the flight recorder is not enabled on this gateway")
	}
	return nil
}

// recordList lists flight-recorder events, filtered and paged by sequence.
func (h *Handler) recordList(ctx context.Context, c *call) (any, error) {
	if err := h.needRecorder(c, "record/list"); err != nil {
		return nil, err
	}
	var a struct {
		Run    string   `json:"run"`
		Lease  string   `json:"lease"`
		Repo   string   `json:"repo"`
		Commit string   `json:"commit"`
		Kinds  []string `json:"kinds"`
		Cursor string   `json:"cursor"`
		Limit  int      `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	f := record.Filter{Run: a.Run, Lease: a.Lease, Repo: a.Repo, Commit: a.Commit, Limit: limit + 1}
	if a.Cursor != "" {
		from, err := strconv.ParseUint(a.Cursor, 10, 64)
		if err != nil {
			return nil, &Error{Status: 400, Code: "InvalidArgument", Message: "cursor must be a record sequence number"}
		}
		f.From = from
	}
	for _, k := range a.Kinds {
		f.Kinds = append(f.Kinds, record.Kind(k))
	}
	out := []record.Event{}
	next := ""
	err = h.rec.List(ctx, f, func(e record.Event) error {
		if len(out) == limit {
			next = strconv.FormatUint(e.Seq, 10)
			return record.ErrStop
		}
		out = append(out, e)
		return nil
	})
	if err != nil && !errors.Is(err, record.ErrStop) {
		return nil, err
	}
	return map[string]any{"records": out, "next_cursor": next}, nil
}

// recordExplain answers "what is behind this commit": its run, lease,
// events and read manifest.
func (h *Handler) recordExplain(ctx context.Context, c *call) (any, error) {
	if err := h.needRecorder(c, "record/explain"); err != nil {
		return nil, err
	}
	var a struct {
		Repo   string `json:"repo"`
		Commit string `json:"commit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("commit", a.Commit); err != nil {
		return nil, err
	}
	ex, err := h.rec.Explain(ctx, a.Repo, a.Commit)
	if errors.Is(err, record.ErrNotFound) {
		return nil, notFound("no record of commit " + a.Commit)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"explanation": ex}, nil
}

// recordVerify checks the hash chain and indexes.
func (h *Handler) recordVerify(ctx context.Context, c *call) (any, error) {
	if err := h.needRecorder(c, "record/verify"); err != nil {
		return nil, err
	}
	if err := c.decode(&struct{}{}); err != nil {
		return nil, err
	}
	problems := []record.Problem{}
	rep, err := h.rec.Verify(ctx, func(p record.Problem) {
		if len(problems) < 1000 {
			problems = append(problems, p)
		}
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"report": rep, "ok": rep.OK(), "problems": problems}, nil
}
