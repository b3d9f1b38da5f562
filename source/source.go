package source

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/agentnas/nas/checksum"
	"github.com/agentnas/nas/manifest"
)

// Source is a read-only tree of objects outside the gateway. Keys are
// relative to the source's root (an S3 prefix, a folder). Implementations
// map their failures to the errors of this package and never write.
type Source interface {
	// List calls fn for every object whose key is greater than after ("":
	// from the start), in byte order of keys. An error from fn ends the
	// listing and is returned.
	List(ctx context.Context, after string, fn func(Object) error) error
	// Stat returns what key is now; ErrChanged if it is gone.
	Stat(ctx context.Context, key string) (Object, error)
	// ReadRange returns bytes [off, off+n) of the pinned object p, and
	// nothing else: if the object is no longer the pinned version it fails
	// with ErrChanged (before the first byte, or from Read). The reader
	// returns io.EOF only after exactly n bytes, and, when the range is the
	// whole object, only after the checksum the remote offers matched.
	ReadRange(ctx context.Context, p Pin, off, n int64) (io.ReadCloser, error)
}

// Object is one object of a source as it is now.
type Object struct {
	Key       string
	Size      int64
	ETag      string // without quotes
	VersionID string // "" when the source keeps no versions
	ModTime   time.Time
	// ContentType and Meta (user metadata, names lower-cased, sorted) are
	// what a Stat of an S3 source answers; listings carry neither.
	ContentType string
	Meta        []manifest.Pair
}

// Pin names one version of an object: what a lazy entry stands for.
type Pin struct {
	Key       string
	Size      int64
	ETag      string
	VersionID string
}

// Pin returns the pin of o.
func (o Object) Pin() Pin { return Pin{Key: o.Key, Size: o.Size, ETag: o.ETag, VersionID: o.VersionID} }

// String names the pin in error messages (for the owner and the log; the
// S3 edge does not show them to readers).
func (p Pin) String() string {
	if p.VersionID != "" {
		return fmt.Sprintf("%s (ETag %q, version %s)", p.Key, p.ETag, p.VersionID)
	}
	return fmt.Sprintf("%s (ETag %q)", p.Key, p.ETag)
}

// isMD5ETag reports whether etag has the form of a single-part S3 ETag
// (32 hex digits), which is the MD5 of the content unless the object is
// encrypted with KMS or a customer key.
func isMD5ETag(etag string) bool {
	if len(etag) != 32 {
		return false
	}
	_, err := hex.DecodeString(etag)
	return err == nil
}

// verifier wraps a body with the checks a fetch must pass before its bytes
// count: exactly the pinned length, and every checksum the remote vouched
// for. Its Read returns io.EOF only when every check passed. The checksums
// are computed on a goroutine of their own, fed copies of what Read
// returns, so that hashing the whole body (MD5 at about 700 MB/s a core)
// runs beside the reader's own work (chunking and storing a fetch) instead
// of in series with it. Close stops that goroutine, then closes the
// body; a verifier must be closed.
type verifier struct {
	r    io.ReadCloser
	left int64
	what string
	sums []digest

	feed chan []byte   // copies of the body for the digest goroutine
	done chan struct{} // closed when the goroutine has hashed everything
}

// digest is one expected checksum of the whole object.
type digest struct {
	name string
	h    hash.Hash
	want []byte
}

func newVerifier(r io.ReadCloser, n int64, what string) *verifier {
	return &verifier{r: r, left: n, what: what}
}

// expectMD5 adds the MD5 an ETag stands for.
func (v *verifier) expectMD5(etag string) {
	want, err := hex.DecodeString(etag)
	if err == nil {
		v.sums = append(v.sums, digest{name: "MD5 (ETag)", h: md5.New(), want: want})
	}
}

// expectChecksum adds an S3 full-object checksum (base64 value).
func (v *verifier) expectChecksum(alg checksum.Algorithm, want []byte) {
	v.sums = append(v.sums, digest{name: string(alg), h: alg.New(), want: want})
}

// digestBuf is the size of the copies handed to the digest goroutine, and
// digestDepth how many may wait for it (at most 2 MiB in flight).
const (
	digestBuf   = 64 << 10
	digestDepth = 32
)

var digestPool = sync.Pool{New: func() any { b := make([]byte, digestBuf); return &b }}

// hash hands a copy of p to the digest goroutine, starting it first.
func (v *verifier) hash(p []byte) {
	if len(v.sums) == 0 || len(p) == 0 {
		return
	}
	if v.feed == nil {
		v.feed, v.done = make(chan []byte, digestDepth), make(chan struct{})
		go func(feed <-chan []byte, done chan<- struct{}, sums []digest) {
			defer close(done)
			for b := range feed {
				for _, d := range sums {
					d.h.Write(b)
				}
				b = b[:cap(b)]
				digestPool.Put(&b)
			}
		}(v.feed, v.done, v.sums)
	}
	for len(p) > 0 {
		b := *digestPool.Get().(*[]byte)
		n := copy(b, p)
		v.feed <- b[:n]
		p = p[n:]
	}
}

// wait ends the digest goroutine once it hashed what it was fed.
func (v *verifier) wait() {
	if v.feed != nil {
		close(v.feed)
		<-v.done
		v.feed = nil
	}
}

// Close stops the digest goroutine and closes the body.
func (v *verifier) Close() error {
	v.wait()
	return v.r.Close()
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.left < 0 {
		return 0, fmt.Errorf("%s: longer than pinned: %w", v.what, ErrCorrupt)
	}
	if int64(len(p)) > v.left+1 {
		// Ask for one byte more than expected, to notice a longer body.
		p = p[:v.left+1]
	}
	n, err := v.r.Read(p)
	v.left -= int64(n)
	if v.left < 0 {
		return n + int(v.left), fmt.Errorf("%s: longer than pinned: %w", v.what, ErrCorrupt)
	}
	v.hash(p[:n])
	if err == io.EOF {
		if v.left > 0 {
			return n, fmt.Errorf("%s: body cut short, %d bytes missing: %w", v.what, v.left, ErrUnavailable)
		}
		v.wait()
		for _, d := range v.sums {
			if got := d.h.Sum(nil); string(got) != string(d.want) {
				return n, fmt.Errorf("%s: %s does not match what the remote vouched for: %w", v.what, d.name, ErrCorrupt)
			}
		}
	}
	return n, err
}
