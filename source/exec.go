package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentnas/nas/adapter"
	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/program"
)

// Exec is the data an adapter program shows, as a Source:
// `exec:/PATH/TO/ADAPTER`, run with the arguments given at attach and
// spoken to over stdio in the protocol of package adapter.
//
// Entries are pinned to the adapter's version token (the version ID; the
// ETag is the adapter's SHA-256 of the bytes when it gave one, else a
// digest of the token). Every answer is checked before it counts: keys in
// order and valid, sizes and lengths as pinned, the version the bytes are
// of, and the SHA-256 of a whole read. An adapter that stalls longer than
// Timeout, breaks the protocol or lies about a length is killed, and the
// next request starts a fresh one; a few run at once.
type Exec struct {
	c     ExecConfig
	idle  chan *proc    // started adapters waiting for a request
	slots chan struct{} // one per adapter that may be started

	mu      sync.Mutex
	closed  bool
	failed  time.Time // when an adapter last failed to start
	failErr error
}

var _ Source = (*Exec)(nil)

// ExecConfig describes an adapter source.
type ExecConfig struct {
	Path string   // absolute path of the program
	Args []string // its arguments
	// Timeout bounds every wait for the adapter: its start, an answer, and
	// each stretch of a read's bytes (0 means 30 s).
	Timeout time.Duration
	// Procs is how many adapters may run at once (0 means 2).
	Procs int
	Log   *slog.Logger
}

// Limits on what an attach may ask an adapter to run with.
const (
	maxAdapterArgs   = 64
	maxAdapterArgLen = 4096
	// restartDelay is how long after an adapter failed to start the next
	// start is refused with the same error (so a broken adapter is not
	// started once per request).
	restartDelay = time.Second
	// drainMax is how much of a read left unread is drained at Close to
	// keep its adapter; past it the adapter is killed.
	drainMax = 1 << 20
)

// checkAdapterArgs refuses arguments an adapter must not be given.
func checkAdapterArgs(args []string) error {
	if len(args) > maxAdapterArgs {
		return fmt.Errorf("an adapter takes at most %d arguments: %w", maxAdapterArgs, ErrInvalid)
	}
	for _, a := range args {
		if len(a) > maxAdapterArgLen || strings.IndexByte(a, 0) >= 0 || !utf8.ValidString(a) {
			return fmt.Errorf("adapter argument %.40q: at most %d bytes of UTF-8 without NUL: %w", a, maxAdapterArgLen, ErrInvalid)
		}
	}
	return nil
}

// OpenExec returns the source of the adapter c describes. It starts
// nothing: the first request (or Probe) does.
func OpenExec(c ExecConfig) (*Exec, error) {
	if !filepath.IsAbs(c.Path) {
		return nil, fmt.Errorf("adapter %q: the path must be absolute: %w", c.Path, ErrInvalid)
	}
	if err := checkAdapterArgs(c.Args); err != nil {
		return nil, err
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Procs <= 0 {
		c.Procs = 2
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	e := &Exec{c: c, idle: make(chan *proc, c.Procs), slots: make(chan struct{}, c.Procs)}
	for range c.Procs {
		e.slots <- struct{}{}
	}
	return e, nil
}

// Probe starts an adapter and checks that it speaks the protocol.
func (e *Exec) Probe(ctx context.Context) error {
	p, err := e.take(ctx)
	if err != nil {
		return err
	}
	e.give(p)
	return nil
}

// Close stops the idle adapters; busy ones stop when their request ends.
func (e *Exec) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	for {
		select {
		case p := <-e.idle:
			p.kill()
		default:
			return nil
		}
	}
}

// take returns an idle adapter, starting one when a slot is free.
func (e *Exec) take(ctx context.Context) (*proc, error) {
	select {
	case p := <-e.idle:
		return p, nil
	default:
	}
	select {
	case p := <-e.idle:
		return p, nil
	case <-e.slots:
		p, err := e.start(ctx)
		if err != nil {
			e.slots <- struct{}{}
			return nil, err
		}
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// give returns a healthy adapter after a request; a broken one is
// killed and its slot freed.
func (e *Exec) give(p *proc) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if p.broken || closed {
		p.kill()
		e.slots <- struct{}{}
		return
	}
	e.idle <- p
}

// start runs an adapter and greets it.
func (e *Exec) start(ctx context.Context) (*proc, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, fmt.Errorf("adapter %s: source closed: %w", e.c.Path, ErrUnavailable)
	}
	if err := e.failErr; err != nil && time.Since(e.failed) < restartDelay {
		e.mu.Unlock()
		return nil, err
	}
	e.mu.Unlock()
	p, err := startProc(e.c)
	if err == nil {
		err = p.hello(ctx, e.c.Timeout)
		if err != nil {
			p.kill()
		}
	}
	if err != nil {
		err = fmt.Errorf("adapter %s: %v: %w", e.c.Path, err, ErrUnavailable)
		e.mu.Lock()
		e.failed, e.failErr = time.Now(), err
		e.mu.Unlock()
		return nil, err
	}
	return p, nil
}

// call sends req to an adapter and returns its answer; the adapter is
// given back unless a read's bytes follow (then done gives it back).
func (e *Exec) call(ctx context.Context, req adapter.Request) (*proc, *adapter.Response, error) {
	p, err := e.take(ctx)
	if err != nil {
		return nil, nil, err
	}
	res, err := p.call(ctx, req, e.c.Timeout)
	if err != nil {
		p.broken = true
		e.give(p)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("adapter %s: %s: %v: %w", e.c.Path, req.Op, err, ErrUnavailable)
	}
	return p, res, nil
}

// answerError maps an adapter's error answer for what.
func answerError(what string, ae *adapter.Error) error {
	switch ae.Code {
	case adapter.CodeNotFound:
		return fmt.Errorf("%s: gone from the adapter: %s: %w", what, ae.Message, ErrChanged)
	case adapter.CodeChanged:
		return fmt.Errorf("%s: %s: %w", what, ae.Message, ErrChanged)
	}
	return fmt.Errorf("%s: adapter: %s: %w", what, ae.Error(), ErrUnavailable)
}

// List implements Source, a page of the adapter's listing at a time.
func (e *Exec) List(ctx context.Context, after string, fn func(Object) error) error {
	for {
		p, res, err := e.call(ctx, adapter.Request{Op: adapter.OpList, After: after, Limit: adapter.MaxPage})
		if err != nil {
			return err
		}
		e.give(p)
		if res.Error != nil {
			return answerError("listing after "+after, res.Error)
		}
		if len(res.Objects) > adapter.MaxPage || (res.More && len(res.Objects) == 0) {
			return fmt.Errorf("adapter %s: a list page of %d objects (more: %v): %w", e.c.Path, len(res.Objects), res.More, ErrCorrupt)
		}
		for _, ao := range res.Objects {
			if ao.Key <= after {
				return fmt.Errorf("adapter %s: listed %q after %q, out of order: %w", e.c.Path, ao.Key, after, ErrCorrupt)
			}
			o, err := e.object(ao)
			if err != nil {
				return err
			}
			if err := fn(o); err != nil {
				return err
			}
			after = ao.Key
		}
		if !res.More {
			return nil
		}
	}
}

// object checks what the adapter said of one object and turns it into
// an Object.
func (e *Exec) object(ao adapter.Object) (Object, error) {
	bad := func(why string) (Object, error) {
		return Object{}, fmt.Errorf("adapter %s: object %.200q: %s: %w", e.c.Path, ao.Key, why, ErrCorrupt)
	}
	switch {
	case ao.Key == "" || len(ao.Key) > adapter.MaxKey || !utf8.ValidString(ao.Key) || strings.IndexByte(ao.Key, 0) >= 0:
		return bad("not a key (1-1024 bytes of UTF-8 without NUL)")
	case ao.Size < 0 || ao.Size > adapter.MaxSize:
		return bad(fmt.Sprintf("size %d outside 0-5 TiB", ao.Size))
	case ao.Version == "" || len(ao.Version) > adapter.MaxVersion || !utf8.ValidString(ao.Version):
		return bad("a version must be 1-1024 bytes of UTF-8")
	case ao.SHA256 != "" && !isHex(ao.SHA256, sha256.Size):
		return bad("sha256 is not 64 hex digits")
	case len(ao.ContentType) > 256:
		return bad("content type longer than 256 bytes")
	}
	etag := strings.ToLower(ao.SHA256)
	if etag == "" {
		sum := sha256.Sum256([]byte(ao.Version))
		etag = hex.EncodeToString(sum[:20])
	}
	return Object{Key: ao.Key, Size: ao.Size, ETag: etag, VersionID: ao.Version, ModTime: ao.ModTime.UTC(), ContentType: ao.ContentType}, nil
}

func isHex(s string, n int) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == n
}

// Stat implements Source.
func (e *Exec) Stat(ctx context.Context, key string) (Object, error) {
	p, res, err := e.call(ctx, adapter.Request{Op: adapter.OpStat, Key: key})
	if err != nil {
		return Object{}, err
	}
	e.give(p)
	switch {
	case res.Error != nil:
		return Object{}, answerError(key, res.Error)
	case res.Object == nil || res.Object.Key != key:
		return Object{}, fmt.Errorf("adapter %s: stat of %q answered another object: %w", e.c.Path, key, ErrCorrupt)
	}
	return e.object(*res.Object)
}

// ReadRange implements Source. A range that ends where the pinned object
// does asks for one byte more, so an object longer than pinned is seen.
func (e *Exec) ReadRange(ctx context.Context, pin Pin, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n < 0 || off > pin.Size || n > pin.Size-off {
		return nil, fmt.Errorf("range %d+%d of %s (%d bytes): %w", off, n, pin, pin.Size, ErrInvalid)
	}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	ask := n
	if off+n == pin.Size {
		ask++
	}
	p, res, err := e.call(ctx, adapter.Request{Op: adapter.OpRead, Key: pin.Key, Version: pin.VersionID, Offset: off, Length: ask})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (io.ReadCloser, error) {
		p.broken = true // the announced bytes are not read: the stream is out of step
		e.give(p)
		return nil, err
	}
	switch {
	case res.Error != nil:
		e.give(p)
		return nil, answerError(pin.String(), res.Error)
	case res.Version != pin.VersionID:
		return fail(fmt.Errorf("%s: the adapter answered bytes of version %.100q: %w", pin, res.Version, ErrChanged))
	case res.Length == n+1 && ask > n:
		return fail(fmt.Errorf("%s: longer than pinned, under the same version: %w", pin, ErrCorrupt))
	case res.Length != n:
		return fail(fmt.Errorf("%s: the adapter announced %d bytes for %d+%d: %w", pin, res.Length, off, n, ErrCorrupt))
	}
	body := &execBody{e: e, p: p, left: n, timeout: e.c.Timeout}
	v := newVerifier(body, n, pin.String())
	if off == 0 && n == pin.Size && len(pin.ETag) == 2*sha256.Size {
		if want, err := hex.DecodeString(pin.ETag); err == nil {
			v.expectChecksum(checksum.SHA256, want)
		}
	}
	return v, nil
}

// execBody reads the bytes that follow a read's answer, then gives its
// adapter back: drained when little is left unread, killed otherwise.
type execBody struct {
	e       *Exec
	p       *proc
	left    int64
	timeout time.Duration
	done    bool
}

func (b *execBody) Read(buf []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.done {
		return 0, errors.New("read after close")
	}
	if int64(len(buf)) > b.left {
		buf = buf[:b.left]
	}
	n, err := b.p.read(buf, b.timeout)
	b.left -= int64(n)
	if err != nil {
		b.p.broken = true
		return n, fmt.Errorf("adapter %s: reading bytes: %v: %w", b.e.c.Path, err, ErrUnavailable)
	}
	return n, nil
}

func (b *execBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	if b.left > 0 && (b.left > drainMax || b.p.drain(b.left, b.timeout) != nil) {
		b.p.broken = true
	}
	b.e.give(b.p)
	return nil
}

// allowAdapter returns the program path names when it is a regular,
// executable file inside the gateway's adapter folder (symbolic links
// resolved first, so none leads out of it).
func (r *Registry) allowAdapter(path string) (string, error) {
	if r.o.Adapters == "" {
		return "", fmt.Errorf("adapter %s: this gateway runs no adapters (start it with --source-adapters DIR and install the program there): %w", path, ErrInvalid)
	}
	real, err := program.Allow(r.o.Adapters, path)
	if err != nil {
		return "", fmt.Errorf("adapter %s (the gateway's adapter folder): %v: %w", path, err, ErrInvalid)
	}
	return real, nil
}
