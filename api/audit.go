package api

import (
	"context"
	"errors"
	"strconv"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/record"
)

// The flight recorder: owner operations.

func (h *Handler) needRecorder() error {
	if h.rec == nil {
		return notFound("the flight recorder is not enabled on this gateway")
	}
	return nil
}

// recordList lists flight-recorder events, filtered and paged by sequence.
func (h *Handler) recordList(ctx context.Context, c *call, a *apiv1.RecordListRequest) (*apiv1.RecordListResponse, error) {
	if err := h.needRecorder(); err != nil {
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
			return nil, invalid("cursor must be a record sequence number")
		}
		f.From = from
	}
	for _, k := range a.Kinds {
		f.Kinds = append(f.Kinds, record.Kind(k))
	}
	out := &apiv1.RecordListResponse{Records: []apiv1.Event{}}
	err = h.rec.List(ctx, f, func(e record.Event) error {
		if len(out.Records) == limit {
			out.NextCursor = strconv.FormatUint(e.Seq, 10)
			return record.ErrStop
		}
		out.Records = append(out.Records, eventOut(e))
		return nil
	})
	if err != nil && !errors.Is(err, record.ErrStop) {
		return nil, err
	}
	return out, nil
}

// recordExplain answers "what is behind this commit": its run, lease,
// events and read manifest.
func (h *Handler) recordExplain(ctx context.Context, c *call, a *apiv1.RecordExplainRequest) (*apiv1.RecordExplainResponse, error) {
	if err := h.needRecorder(); err != nil {
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
	return &apiv1.RecordExplainResponse{Explanation: explanationOut(ex)}, nil
}

// maxProblems bounds the problems record/verify lists.
const maxProblems = 1000

// recordVerify checks the hash chain and indexes.
func (h *Handler) recordVerify(ctx context.Context, c *call, a *apiv1.RecordVerifyRequest) (*apiv1.RecordVerifyResponse, error) {
	if err := h.needRecorder(); err != nil {
		return nil, err
	}
	out := &apiv1.RecordVerifyResponse{Problems: []apiv1.Problem{}}
	rep, err := h.rec.Verify(ctx, func(p record.Problem) {
		if len(out.Problems) < maxProblems {
			out.Problems = append(out.Problems, problemOut(p))
		}
	})
	if err != nil {
		return nil, err
	}
	out.Report, out.OK = verifyOut(rep), rep.OK()
	return out, nil
}
