package api

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/secret"
)

// objectPutBatch stores small objects in one call (a file system's many
// small files): each goes through the steps of a PUT of its own, through
// the door (authorized, charged, labelled, its preconditions under the
// veil, a handoff document checked), and all of them share one segment
// of the chunk store, one sync of it and one branch transaction. An
// object refused on its own is answered with its error and refunded; the
// others are stored.
func (h *Handler) objectPutBatch(ctx context.Context, c *call, a *apiv1.ObjectPutBatchRequest) (*apiv1.ObjectPutBatchResponse, error) {
	if err := checkBatch(a.Objects); err != nil {
		return nil, err
	}
	br, err := h.target(ctx, c, a.Repo, a.Branch)
	if err != nil {
		return nil, err
	}
	b, err := h.b.GetBranch(ctx, a.Repo, br)
	if err != nil {
		return nil, err
	}
	if b.Protected { // before anything is charged, as PUT does before the body
		return nil, fmt.Errorf("%s/%s: %w", a.Repo, br, branch.ErrProtected)
	}
	up := h.b.Chunks().NewUpload()
	defer up.Close()
	out := &apiv1.ObjectPutBatchResponse{Results: make([]apiv1.BatchResult, len(a.Objects))}
	var ps []prepared
	for i := range a.Objects {
		o := &a.Objects[i]
		out.Results[i] = apiv1.BatchResult{Key: o.Key, Size: int64(len(o.Data))}
		p, err := h.preparePut(ctx, c, auth.Target{Repo: a.Repo, Branch: br, Key: o.Key}, o, up)
		if err != nil {
			out.Results[i].Error = itemError(err)
			continue
		}
		p.at = i
		ps = append(ps, p)
	}
	if err := h.stageBatch(ctx, a.Repo, br, up, ps, out); err != nil {
		return nil, err
	}
	if !c.p.IsOwner() {
		r := remainingOut(h.auth.Remaining(ctx, c.p))
		out.Remaining = &r
	}
	return out, nil
}

// prepared is one object of a batch, ready to stage: its item, its
// charge, its chunk map (nil when sealed) and its place in the request.
type prepared struct {
	item   branch.PutItem
	charge *auth.Charge
	chunks []apiv1.Chunk
	at     int
}

// stageBatch syncs the batch's upload and stages its items, putting each
// one's result at out.Results[p.at]; a failed item's charge is refunded.
func (h *Handler) stageBatch(ctx context.Context, repo, br string, up *cas.Upload, ps []prepared, out *apiv1.ObjectPutBatchResponse) error {
	if len(ps) == 0 {
		return nil
	}
	if err := up.Sync(ctx); err != nil {
		for _, p := range ps {
			p.charge.Refund(ctx)
		}
		return err
	}
	items := make([]branch.PutItem, len(ps))
	for i, p := range ps {
		items[i] = p.item
	}
	for j, r := range h.b.PutKeys(ctx, repo, br, items, up) {
		p, res := ps[j], &out.Results[ps[j].at]
		if r.Err != nil {
			p.charge.Refund(ctx)
			res.Error = itemError(r.Err)
			continue
		}
		res.ETag, res.VersionID, res.Chunks = r.Entry.ETag, r.Entry.VersionID, p.chunks
	}
	return nil
}

// checkBatch refuses a batch past its bounds before anything is done.
func checkBatch(objs []apiv1.BatchObject) error {
	if len(objs) == 0 || len(objs) > apiv1.MaxBatchObjects {
		return invalid(fmt.Sprintf("a put-batch holds 1 to %d objects", apiv1.MaxBatchObjects))
	}
	var data, keys int
	for _, o := range objs {
		data += len(o.Data) // each under the 4 MiB body: no overflow
		keys += len(o.Key)
	}
	if data > apiv1.MaxBatchData || keys > apiv1.MaxBatchKeyBytes {
		return invalid(fmt.Sprintf("a put-batch holds at most %d bytes of data and %d bytes of keys; upload large objects with PUT",
			apiv1.MaxBatchData, apiv1.MaxBatchKeyBytes))
	}
	return nil
}

// preparePut is a PUT's work for one object of a batch up to staging:
// the door allows the write, the metadata is checked, the retention rules
// decide how its bytes are kept, the write budget pays, the bytes go into
// the shared upload beside their checksums and the secret scanner, and the
// entry gets its label and precondition. It returns the object ready to
// stage, with its charge (refunded here on failure).
func (h *Handler) preparePut(ctx context.Context, c *call, t auth.Target, o *apiv1.BatchObject, up *cas.Upload) (prepared, error) {
	if err := h.auth.Authorize(ctx, c.p, lease.Write, t); err != nil {
		return prepared{}, err
	}
	if err := checkUserMeta(o.ContentType, o.Meta); err != nil {
		return prepared{}, err
	}
	class, domain, err := h.auth.Retention(ctx, c.p, t.Repo, t.Key, "", "")
	if err != nil {
		return prepared{}, err
	}
	charge, err := h.auth.Write(ctx, c.p, t, int64(len(o.Data)))
	if err != nil {
		return prepared{}, err
	}
	p, err := h.ingestItem(ctx, c, t, o, up, class, domain)
	if err != nil {
		charge.Refund(ctx)
		return prepared{}, err
	}
	p.charge = charge
	return p, nil
}

// ingestItem stores o's bytes in up and builds its entry.
func (h *Handler) ingestItem(ctx context.Context, c *call, t auth.Target, o *apiv1.BatchObject, up *cas.Upload, class, domain string) (prepared, error) {
	hdr := http.Header{}
	if o.ChecksumCRC32C != "" {
		hdr.Set(checksum.CRC32C.Header(), o.ChecksumCRC32C)
	}
	set, err := checksum.FromRequest(hdr)
	if err != nil {
		return prepared{}, &Error{Status: http.StatusBadRequest, Code: apiv1.CodeInvalidArgument, Message: err.Error()}
	}
	defer set.Close()
	hoff, err := h.auth.HandoffFor(ctx, c.p, t)
	if err != nil {
		return prepared{}, err
	}
	sc := secret.New()
	refs, n, sl, err := h.b.Ingest(ctx, up, bytes.NewReader(o.Data), io.MultiWriter(set.Writer(), sc), domain)
	if err != nil {
		return prepared{}, err
	}
	if err := set.Verify(nil); err != nil {
		return prepared{}, &Error{Status: http.StatusBadRequest, Code: "BadDigest", Message: err.Error()}
	}
	e := &manifest.Entry{Size: n, ETag: hex.EncodeToString(set.MD5()), ContentType: o.ContentType, Meta: sortedMeta(o.Meta), Retention: class}
	if e.ContentType == "" {
		e.ContentType = "binary/octet-stream"
	}
	if alg, ok := set.Algorithm(); ok {
		e.ChecksumAlgorithm, e.ChecksumValue, e.ChecksumType = string(alg), set.Value(), "FULL_OBJECT"
	}
	if e.Label, err = h.auth.WriteLabel(ctx, c.p, nil, sc.Found()); err != nil {
		return prepared{}, err
	}
	if hoff != nil {
		if err := auth.HandoffCheck(hoff, n, o.Data[:min(len(o.Data), auth.MaxHandoffDoc+1)]); err != nil {
			return prepared{}, err
		}
		l := label.Of(e.Label)
		l.Reviewed = true
		e.Label = &l
	}
	cond, err := h.auth.Condition(ctx, c.p, t, branch.Condition{IfNoneMatch: o.IfNoneMatch})
	if err != nil {
		return prepared{}, err
	}
	ch, data := e.SetContent(&manifest.Content{Chunks: refs, Seal: sl})
	p := prepared{item: branch.PutItem{Key: t.Key, Entry: e, Cond: cond, Recs: []branch.Recorder{branch.ContentRecord{Hash: ch, Data: data}}}}
	if sl == nil {
		p.chunks = make([]apiv1.Chunk, len(refs))
		for i, r := range refs {
			p.chunks[i] = apiv1.Chunk{Hash: r.Hash.String(), Size: r.Size}
		}
	}
	return p, nil
}

// checkUserMeta refuses metadata a PUT's headers could not carry: names
// that are not header tokens, values with control characters, the names
// of labels and retention (which a batch does not set; PUT does), and
// more than 2 KB in all.
func checkUserMeta(contentType string, meta map[string]string) error {
	if !httpguts.ValidHeaderFieldValue(contentType) {
		return invalid("content_type is not a header value")
	}
	for k, v := range meta {
		if k == "" || !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return invalid(fmt.Sprintf("metadata %q: names are header tokens, values header values", k))
		}
		if strings.HasPrefix(strings.ToLower(k), "nas-") {
			return invalid(fmt.Sprintf("metadata %q: nas- names are labels and retention, set by PUT or label/set", k))
		}
	}
	return checkMeta(contentType, meta)
}

// itemError is err as one object's error of a batch.
func itemError(err error) *apiv1.Error {
	e := toError(err)
	return &apiv1.Error{Code: e.Code, Message: e.Message, Retryable: e.Retryable, Details: e.Details}
}
