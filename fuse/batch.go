package fuse

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/client"
)

// Small files are uploaded together: whole files of at most batchFileMax
// bytes go to the gateway in one object/put-batch call, which authorizes,
// charges and stages each as its own PUT would, with one sync of the
// chunk store and one of the branch for all of them. A program writing
// thousands of small files then costs the gateway a round trip and a
// sync per batch, not per file.
const batchFileMax = 256 << 10

// batchable reports whether st, a file's unsaved changes, can go in a
// batch: the whole file is local (nothing of a base version is still
// the gateway's), small, and not being streamed. The caller holds st.mu.
func (st *staged) batchable() bool {
	return !st.closed && st.stream == nil && (st.base == nil || st.baseSize == 0) && st.size.Load() <= batchFileMax
}

// mayBatch is batchable for a file whose locks the caller does not hold,
// with the file's size: a hint, checked again under the locks.
func (f *fileNode) mayBatch() (bool, int64) {
	if f.m.noBatch.Load() {
		return false, 0
	}
	f.mu.Lock()
	st := f.staged
	f.mu.Unlock()
	if st == nil {
		return false, 0
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.batchable(), st.size.Load()
}

// batchItem is one file of a batch being uploaded, its staging locked.
type batchItem struct {
	f   *fileNode
	st  *staged
	key string
	at  int // index in the files given to flushBatch
}

// flushBatch uploads the unsaved changes of files (at most
// apiv1.MaxBatchObjects of them) in one put-batch call, and returns each
// file's error in order. A file another upload holds, that is no longer
// batchable or that would pass the batch's bounds is flushed on its own
// afterwards, as is every file when the gateway has no put-batch.
func (m *Mount) flushBatch(ctx context.Context, files []*fileNode) []error {
	ctx, cancel := uninterrupted(ctx)
	defer cancel()
	errs := make([]error, len(files))
	for _, i := range m.sendBatch(ctx, files, errs) {
		errs[i] = files[i].flush(ctx)
	}
	return errs
}

// sendBatch sends the batch of files, errors to errs, and returns the
// indexes of the files to flush on their own. It holds every sent file's
// upload lock (flushMu, taken without waiting so two batches never wait
// for each other), the names (ns: no rename moves a key being sent) and
// the staging of each, until the gateway answered.
func (m *Mount) sendBatch(ctx context.Context, files []*fileNode, errs []error) (alone []int) {
	if err := m.writable(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return nil
	}
	held := make([]bool, len(files))
	defer func() {
		for i, f := range files {
			if held[i] {
				f.flushMu.Unlock()
			}
		}
	}()
	for i, f := range files {
		if held[i] = f.flushMu.TryLock(); !held[i] {
			alone = append(alone, i) // flushed after, which waits for the other upload
		}
	}
	m.ns.RLock()
	defer m.ns.RUnlock()
	items, req, rest := m.collectBatch(files, held, errs)
	alone = append(alone, rest...)
	if len(items) == 0 {
		return alone
	}
	defer func() {
		for _, it := range items {
			it.st.mu.Unlock()
		}
	}()
	var resp apiv1.ObjectPutBatchResponse
	err := m.r.c.Do(ctx, req, &resp)
	if client.Code(err) == apiv1.CodeUnknownOperation {
		m.noBatch.Store(true) // an older gateway: send each on its own
		for _, it := range items {
			alone = append(alone, it.at)
		}
		return alone
	}
	if err == nil && len(resp.Results) != len(items) {
		err = fmt.Errorf("put-batch answered %d results for %d objects: %w", len(resp.Results), len(items), syscall.EIO)
	}
	if err != nil {
		for _, it := range items {
			errs[it.at] = err // still staged: the next flush sends it again
		}
		return alone
	}
	if resp.Remaining != nil {
		m.noteWriteLeft(resp.Remaining.BytesWritten)
	}
	for j, r := range resp.Results {
		errs[items[j].at] = m.batchDone(items[j], req.Objects[j], r)
	}
	return alone
}

// collectBatch reads the files to send (held: their upload locks are
// ours) into a request, within its bounds. It returns the files sent,
// their staging locked, and the indexes of the files left to go alone.
func (m *Mount) collectBatch(files []*fileNode, held []bool, errs []error) (items []batchItem, req apiv1.ObjectPutBatchRequest, alone []int) {
	req = apiv1.ObjectPutBatchRequest{Repo: m.r.repo, Branch: m.r.branch}
	var data, keys int
	for i, f := range files {
		if !held[i] {
			continue
		}
		it, obj, status := m.batchEntry(f)
		switch {
		case status == errBatchSkip:
			continue
		case status == errBatchAlone:
			alone = append(alone, i)
			continue
		case status != nil:
			errs[i] = status
			continue
		case len(items) == apiv1.MaxBatchObjects || len(items) > 0 &&
			(data+len(obj.Data) > apiv1.MaxBatchData || keys+len(obj.Key) > apiv1.MaxBatchKeyBytes):
			it.st.mu.Unlock()
			alone = append(alone, i)
			continue
		}
		it.at = i
		items, req.Objects = append(items, it), append(req.Objects, obj)
		data, keys = data+len(obj.Data), keys+len(obj.Key)
	}
	return items, req, alone
}

// What batchEntry says of a file besides a failure of its own.
var (
	errBatchSkip  = errors.New("nothing to upload")        // clean, removed or uploaded meanwhile
	errBatchAlone = errors.New("not for a batch any more") // changed since it was queued: it goes alone
)

// batchEntry reads f's unsaved changes for a batch. On success (nil) it
// returns with st.mu held; errBatchSkip and errBatchAlone say why not.
func (m *Mount) batchEntry(f *fileNode) (batchItem, apiv1.BatchObject, error) {
	f.mu.Lock()
	st := f.staged
	if st == nil || f.unlinked {
		f.mu.Unlock()
		return batchItem{}, apiv1.BatchObject{}, errBatchSkip
	}
	key, meta, ct := f.key, f.metaLocked(), f.contentType
	f.mu.Unlock()
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return batchItem{}, apiv1.BatchObject{}, errBatchSkip
	}
	if !st.batchable() {
		st.mu.Unlock()
		return batchItem{}, apiv1.BatchObject{}, errBatchAlone
	}
	data := make([]byte, st.size.Load())
	n, err := st.f.ReadAt(data, 0)
	if err != nil && err != io.EOF {
		st.mu.Unlock()
		return batchItem{}, apiv1.BatchObject{}, fmt.Errorf("staging area: %w", err)
	}
	clear(data[n:]) // a hole at the end of the local file
	obj := apiv1.BatchObject{Key: m.r.prefix + key, Data: data, ContentType: ct, Meta: meta, ChecksumCRC32C: crc32cOf(data)}
	return batchItem{f: f, st: st, key: key}, obj, nil
}

// batchDone applies the gateway's answer for one file of a batch: it is
// clean at its new version, or its refused changes are dropped (as a
// refused close drops them), or it stays staged for the next flush.
func (m *Mount) batchDone(it batchItem, obj apiv1.BatchObject, r apiv1.BatchResult) error {
	if r.Error != nil {
		err := &client.Error{Op: "object/put-batch " + obj.Key, Status: http.StatusBadRequest, Code: r.Error.Code,
			Message: r.Error.Message, Retryable: r.Error.Retryable, Details: r.Error.Details}
		if r.Error.Retryable {
			err.Status = http.StatusServiceUnavailable
		}
		if reason, ok := r.Error.Details["reason"].(string); ok {
			err.Reason = reason
		}
		if refused(err) {
			it.f.discard(it.st, it.key, err)
		}
		return err
	}
	e := &entry{Key: it.key, Size: int64(len(obj.Data)), ETag: r.ETag, VersionID: r.VersionID, ModTime: time.Now(),
		ContentType: obj.ContentType, Meta: obj.Meta}
	it.f.uploaded(it.st, e, m.keep(e, obj.Data, r.Chunks))
	return nil
}

// keep puts the bytes a file was uploaded with in the chunk cache by the
// chunk map the gateway answered, and returns the version's content, so
// that reading the file back asks the gateway nothing it already said
// (an owner's open) or only to authorize and charge (a lease's). It
// returns nil when the map is missing (sealed) or does not fit the bytes.
func (m *Mount) keep(e *entry, data []byte, chunks []apiv1.Chunk) *content {
	if len(chunks) == 0 && len(data) > 0 {
		return nil
	}
	c := &content{entry: *e, mapped: true}
	var off int64
	for _, ch := range chunks {
		h, err := chunk.ParseHash(ch.Hash)
		n := int64(ch.Size)
		if err != nil || n > int64(len(data))-off {
			return nil
		}
		if err := m.cache.Put(h, data[off:off+n]); err != nil {
			m.log.Warn("chunk cache: an uploaded chunk was not kept", "key", e.Key, "err", err)
			return nil
		}
		c.chunks = append(c.chunks, chunkAt{hash: h, off: off, size: n})
		off += n
	}
	if off != int64(len(data)) {
		return nil
	}
	return c
}

// crc32cOf is data's CRC32C as S3 spells it (base64 of the big-endian
// value).
func crc32cOf(data []byte) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.Checksum(data, castagnoli)))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)
