package source

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/agentnas/nas/checksum"
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

// matches reports whether o is still the version p pins.
func (p Pin) matches(o Object) bool {
	return o.ETag == p.ETag && o.Size == p.Size && (p.VersionID == "" || o.VersionID == p.VersionID)
}

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
// may be recorded: exactly n bytes, and the digests the remote vouched for.
// Its Read returns io.EOF only when every check passed.
type verifier struct {
	r    io.Reader
	left int64
	what string
	sums []digest
}

// digest is one expected checksum of the whole object.
type digest struct {
	name string
	h    hash.Hash
	want []byte
}

func newVerifier(r io.Reader, n int64, what string) *verifier {
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

func (v *verifier) Read(p []byte) (int, error) {
	if v.left < 0 {
		return 0, fmt.Errorf("%s: longer than pinned: %w", v.what, ErrCorrupt)
	}
	if int64(len(p)) > v.left+1 {
		// Ask for one byte more than expected, to notice a longer body.
		p = p[:v.left+1]
	}
	n, err := v.r.Read(p)
	for _, d := range v.sums {
		d.h.Write(p[:n])
	}
	v.left -= int64(n)
	if v.left < 0 {
		return n + int(v.left), fmt.Errorf("%s: longer than pinned: %w", v.what, ErrCorrupt)
	}
	if err == io.EOF {
		if v.left > 0 {
			return n, fmt.Errorf("%s: body cut short, %d bytes missing: %w", v.what, v.left, ErrUnavailable)
		}
		for _, d := range v.sums {
			if got := d.h.Sum(nil); string(got) != string(d.want) {
				return n, fmt.Errorf("%s: %s does not match what the remote vouched for: %w", v.what, d.name, ErrCorrupt)
			}
		}
	}
	return n, err
}
