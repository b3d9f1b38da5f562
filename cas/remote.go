package cas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentnas/nas/kv"
)

// Remote keeps sealed segments as objects elsewhere (Options.Remote: an S3
// bucket that gateways share). The store's directory then only stages the
// segment an upload is writing: Sync stores it remotely and removes the
// local file, and reads fetch the byte ranges they need.
type Remote interface {
	// Put stores the segment name, size bytes read from r; it is durable
	// when Put returns nil.
	Put(ctx context.Context, name string, r io.ReaderAt, size int64) error
	// Open returns a reader of the segment's byte ranges, whose reads
	// are bound to ctx.
	Open(ctx context.Context, name string) io.ReaderAt
	// Delete removes the segment; a missing one is not an error.
	Delete(ctx context.Context, name string) error
	// List calls fn for every stored segment.
	List(ctx context.Context, fn func(name string, size int64, modified time.Time) error) error
}

// segName is segment id's name, relative to the store's root.
func segName(id uint64) string {
	name := fmt.Sprintf("%016x", id)
	return name[:2] + "/" + name + ".seg"
}

// parseSegName is the ID of a segment's name, false for anything else.
func parseSegName(name string) (uint64, bool) {
	base := filepath.Base(name)
	if !strings.HasSuffix(base, ".seg") {
		return 0, false
	}
	id, err := strconv.ParseUint(strings.TrimSuffix(base, ".seg"), 16, 64)
	return id, err == nil
}

// segment returns a reader of segment id, and the release to call when
// done with it: the local file when the store holds it, else the remote
// object. A local file that vanished between the lookup and the open
// reports os.ErrNotExist.
func (s *Store) segment(ctx context.Context, id uint64) (io.ReaderAt, func(), error) {
	if s.remote != nil {
		return remoteSegment{s.remote.Open(ctx, segName(id))}, func() {}, nil
	}
	f, release, err := s.files.open(s.segPath(id))
	if err != nil {
		return nil, nil, err
	}
	return f, release, nil
}

// push stores the upload's finished segment remotely and removes the
// staged file: the bytes are durable once the object is.
func (u *Upload) push(ctx context.Context) error {
	p := u.s.segPath(u.segID)
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("stage segment: %w", err)
	}
	defer f.Close()
	if err := u.s.remote.Put(ctx, segName(u.segID), f, u.segSize); err != nil {
		return fmt.Errorf("store segment %016x: %w: %w", u.segID, kv.ErrUnavailable, err)
	}
	u.pushed = true
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		u.s.log.Warn("removing a staged segment", "path", p, "err", err)
	}
	return nil
}

// dropRemote deletes the remote copy of an upload that was never
// recorded.
func (u *Upload) dropRemote() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := u.s.remote.Delete(ctx, segName(u.segID)); err != nil {
		// A collection removes it later: no record references it.
		u.s.log.Warn("deleting an unrecorded segment", "segment", segName(u.segID), "err", err)
	}
}

// removeRemoteSegments deletes the remote segments that are not in
// liveSegs and were stored before the cycle began.
func (c *Cycle) removeRemoteSegments(ctx context.Context, liveSegs map[uint64]bool, st *SweepStats) error {
	var dead []string
	err := c.s.remote.List(ctx, func(name string, size int64, modified time.Time) error {
		id, ok := parseSegName(name)
		if !ok || liveSegs[id] || c.keepSegment(id, modified) {
			return nil
		}
		dead = append(dead, name)
		st.Segments++
		st.SegmentBytes += size
		return nil
	})
	if err != nil {
		return fmt.Errorf("list segments: %w", err)
	}
	for _, name := range dead {
		if err := c.s.remote.Delete(ctx, name); err != nil {
			return fmt.Errorf("delete segment %s: %w", name, err)
		}
	}
	return nil
}

// remoteSegment is a remote segment's reader whose failures (other than
// reading past its end) say the store is unavailable, so the edges answer
// 503 and clients retry; a segment the bucket does not have is corrupt
// (a loss to report, not an outage to wait out).
type remoteSegment struct{ r io.ReaderAt }

func (g remoteSegment) ReadAt(p []byte, off int64) (int, error) {
	n, err := g.r.ReadAt(p, off)
	switch {
	case err == nil, errors.Is(err, io.EOF):
	case errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	default:
		err = fmt.Errorf("%w: %w", kv.ErrUnavailable, err)
	}
	return n, err
}
