package source

import (
	"context"
	"io"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/manifest"
)

// fill makes every block of lazy entry e local. Each run of missing blocks
// is fetched with one remote GET, as a first read of the whole entry
// would (so an entry of up to MaxRun blocks is one plain GET and the
// remote's whole-object checksum gates it), but nothing of the blocks
// already local is read. The fetched bytes pass through sink as they
// stream (nil: discarded); an error from sink aborts the fetch and
// nothing of it is recorded. fill returns the bytes it fetched and
// recorded, also when it then failed: 0 when e was already local.
func (m *Materializer) fill(ctx context.Context, e *manifest.Entry, sink io.Writer) (int64, error) {
	r, err := m.reader(e, 0, e.Size)
	if err != nil || e.Size == 0 {
		return 0, err
	}
	if sink == nil {
		sink = io.Discard
	}
	last := blockCount(e.Size) - 1
	if err := r.load(ctx, 0, last); err != nil {
		return 0, err
	}
	var fetched int64
	for b := int64(0); b <= last; b++ {
		if r.local[b] != nil {
			continue
		}
		run, err := r.start(ctx, b)
		if err != nil {
			return fetched, err
		}
		if run == nil {
			continue // another reader fetched it meanwhile
		}
		if _, err := run.stream(ctx, sink, run.first*BlockSize, e.Size); err != nil {
			return fetched, err
		}
		for k := run.first; k <= run.last; k++ {
			fetched += blockLen(e.Size, k)
		}
		b = run.last
	}
	return fetched, nil
}

// localBytes returns how many bytes of lazy entry e the side index holds,
// with one range scan over the entry's block records (an undecodable
// record counts as absent, as a read takes it).
func localBytes(rd kv.Reader, e *manifest.Entry) (int64, error) {
	ref := refOf(e.Remote)
	blocks := blockCount(e.Size)
	var n int64
	err := rd.Scan(kv.Prefix(ref.prefix()), func(k, v []byte) error {
		_, b, ok := parseIndexKey(k)
		if !ok || b >= blocks {
			return nil
		}
		if _, err := decodeBlock(v, blockLen(e.Size, b)); err == nil {
			n += blockLen(e.Size, b)
		}
		return nil
	})
	return n, err
}

// waiter is what a throttle needs of a rate limiter (*rate.Limiter).
type waiter interface {
	WaitN(ctx context.Context, n int) error
}

// maxBurst bounds the bytes a limiter lets through at once.
const maxBurst = 1 << 20

// newLimiter returns a limiter of bytesPerSecond over every worker of a
// job and its burst, or nil for no limit (0). The burst is a second's
// worth up to 1 MiB: a limiter starts full, so a job may run ahead of
// the rate by at most that much.
func newLimiter(bytesPerSecond int64) (*rate.Limiter, int) {
	if bytesPerSecond <= 0 {
		return nil, maxBurst
	}
	burst := int(min(bytesPerSecond, maxBurst))
	return rate.NewLimiter(rate.Limit(bytesPerSecond), burst), burst
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

// Write implements io.Writer.
func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// throttled returns the sink of one fetch: it adds the bytes passing to n
// and, when lim is not nil, first waits for lim's tokens for them, in
// pieces of at most burst bytes (WaitN refuses more than the burst).
// Holding the sink back holds back the remote read feeding it. A ctx
// that ends ends the wait with its error, and so the fetch.
func throttled(ctx context.Context, lim waiter, burst int, n *atomic.Int64) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		done := 0
		for done < len(p) {
			k := min(len(p)-done, burst)
			if lim != nil {
				if err := lim.WaitN(ctx, k); err != nil {
					return done, err
				}
			}
			n.Add(int64(k))
			done += k
		}
		return done, nil
	})
}
