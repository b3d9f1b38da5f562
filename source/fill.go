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
// already local is read. The fetches' bodies are read through pace (nil:
// at full speed); its error aborts a fetch and nothing of it is
// recorded. The entry's metadata is asked for too, when it was listed
// without it (FillMeta). fill returns the bytes it fetched and recorded, also when it
// then failed: 0 when e was already local.
func (m *Materializer) fill(ctx context.Context, e *manifest.Entry, pace *pacer) (int64, error) {
	meta := *e
	m.FillMeta(ctx, &meta) // so a read after the prefetch asks the remote nothing
	r, err := m.reader(e, 0, e.Size)
	if err != nil || e.Size == 0 {
		return 0, err
	}
	r.pace = pace
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
		if _, err := run.stream(ctx, io.Discard, run.first*BlockSize, e.Size); err != nil {
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

// waiter is what a pacer needs of a rate limiter (*rate.Limiter).
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

// pacer holds the remote reads of fetches to a rate: each Read of a
// fetch's body asks for at most burst bytes, and after it wait is called
// with the bytes it got. Since burst is at most a second's worth, the
// remote sees a read at least about once a second, well within its stall
// timeout, however low the rate. wait also counts the bytes; it returns
// the error of a context that ended.
type pacer struct {
	burst int
	wait  func(n int) error
}

// newPacer returns the pacer of one job: lim (nil: no limit) with its
// burst, counting into received, its waits ending with ctx.
func newPacer(ctx context.Context, lim waiter, burst int, received *atomic.Int64) *pacer {
	return &pacer{burst: burst, wait: func(n int) error {
		received.Add(int64(n))
		if lim == nil {
			return ctx.Err()
		}
		return lim.WaitN(ctx, n)
	}}
}

// pacedBody is a fetch's body read through a pacer.
type pacedBody struct {
	io.ReadCloser
	p *pacer
}

// Read implements io.Reader.
func (b *pacedBody) Read(p []byte) (int, error) {
	if len(p) > b.p.burst {
		p = p[:b.p.burst]
	}
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		if werr := b.p.wait(n); werr != nil {
			return n, werr
		}
	}
	return n, err
}
