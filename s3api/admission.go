package s3api

import (
	"context"

	"github.com/agentnas/nas/cas"
)

// DefaultMaxLargeBodies is how many request bodies larger than
// cas.ChunkMin the endpoint ingests at once unless Config.MaxLargeBodies
// says otherwise; with LargeBodyMemory each, their buffers take at most
// 328 MiB.
const DefaultMaxLargeBodies = 8

// LargeBodyMemory is the most buffer memory one large body's ingestion
// holds (cas.Upload.IngestTee): the chunker's read-ahead window of four
// cas.ChunkMax, at most six chunk buffers of cas.ChunkMax between the
// reading, hashing and digest stages, and the segment's write block
// (cas.SegmentBlock, held only with cas.Options.DirectWrites; counted
// always, so the ceiling does not depend on the option). Measured, a
// part in flight holds about 27 MiB of it.
const LargeBodyMemory = 10*cas.ChunkMax + cas.SegmentBlock

// admission is the ceiling on large bodies ingested at once: a PUT or
// UploadPart past it waits, before its body is read, until one ends or
// its request is cancelled, so concurrent uploads queue instead of each
// taking its buffers (the chunk store's pools allocate whatever is asked
// of them). Bodies up to cas.ChunkMin take the small path, one buffer of
// that size, and are not counted.
type admission struct {
	slots chan struct{} // one token per body being ingested
}

// newAdmission admits up to n large bodies at once (DefaultMaxLargeBodies
// when n < 1).
func newAdmission(n int) *admission {
	if n < 1 {
		n = DefaultMaxLargeBodies
	}
	return &admission{slots: make(chan struct{}, n)}
}

// acquire waits for room for a body of size bytes (-1: unknown, counted
// as large) and returns the function that gives it back, or ctx's error
// if it ends first.
func (a *admission) acquire(ctx context.Context, size int64) (release func(), err error) {
	if size >= 0 && size <= cas.ChunkMin {
		return func() {}, nil
	}
	select {
	case a.slots <- struct{}{}:
		return func() { <-a.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
