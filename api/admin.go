package api

import (
	"context"
	"net/http"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
)

// Maintenance: owner operations.

func (h *Handler) fsck(ctx context.Context, c *call, a *apiv1.FsckRequest) (*apiv1.FsckResponse, error) {
	rep, err := h.b.Check(ctx)
	if err != nil {
		return nil, err
	}
	return &apiv1.FsckResponse{Report: fsckOut(rep), OK: rep.OK()}, nil
}

// maxRetention bounds the durations admin/gc takes (so the conversion
// to a duration cannot overflow).
const maxRetention = 100 * 365 * 24 * time.Hour

func (h *Handler) gc(ctx context.Context, c *call, a *apiv1.GCRequest) (*apiv1.GCResponse, error) {
	for _, s := range []int64{a.RetentionSeconds, a.UploadExpirySeconds} {
		if s < 0 || s > int64(maxRetention/time.Second) {
			return nil, &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: "retention_seconds and upload_expiry_seconds must be 0 (the default) to 100 years"}
		}
	}
	st, err := h.b.Collect(ctx, branch.GCOptions{
		Retention:    time.Duration(a.RetentionSeconds) * time.Second,
		UploadExpiry: time.Duration(a.UploadExpirySeconds) * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return &apiv1.GCResponse{Stats: gcOut(st)}, nil
}
