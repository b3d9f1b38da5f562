// Package seal encrypts content in frames that can be opened from any
// offset: the sensitive retention class. A segment of plaintext is sealed
// under a data key derived (HKDF-SHA256) from a domain key and the
// segment's random salt, in frames of Frame plaintext bytes, each
// AES-256-GCM with the frame's index as its nonce and the index and a
// last-frame flag as additional data. So a frame cannot be moved,
// repeated, dropped from the end or altered without Open failing, and a
// reader that wants bytes at offset off decrypts only the frames that
// hold them. An empty segment is one empty last frame.
//
// Destroying the domain key (package keyring) makes every segment sealed
// under it unreadable, wherever its ciphertext still lies.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame is the plaintext bytes of a full frame; Overhead is what each
// frame adds (the GCM tag); SaltSize and KeySize are the sizes of a
// segment's salt and of a domain key.
const (
	Frame    = 64 << 10
	Overhead = 16
	SaltSize = 16
	KeySize  = 32
)

// ErrOpen is sealed bytes that do not open: the wrong key, or ciphertext
// that was changed, truncated or reordered.
var ErrOpen = errors.New("sealed content does not open")

// info binds derived keys to this format.
const info = "agentnas seal v1"

// Frames is the number of frames a segment of plain bytes takes: at
// least one.
func Frames(plain int64) int64 {
	if plain <= 0 {
		return 1
	}
	return (plain + Frame - 1) / Frame
}

// CipherSize is the sealed size of plain bytes.
func CipherSize(plain int64) int64 { return max(plain, 0) + Frames(plain)*Overhead }

// NewSalt returns a random salt for a new segment.
func NewSalt() []byte {
	s := make([]byte, SaltSize)
	rand.Read(s)
	return s
}

// Key is the data key of one segment.
type Key struct{ aead cipher.AEAD }

// Derive returns the data key of the segment salted salt under domain.
func Derive(domain, salt []byte) (*Key, error) {
	if len(domain) != KeySize || len(salt) != SaltSize {
		return nil, fmt.Errorf("seal: a %d-byte domain key and a %d-byte salt: %w", len(domain), len(salt), ErrOpen)
	}
	k, err := hkdf.Key(sha256.New, domain, salt, info, KeySize)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Key{aead: aead}, nil
}

// nonce is frame i's nonce: unique under the segment's own key.
func nonce(i int64) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n[4:], uint64(i))
	return n
}

// aad is frame i's additional data.
func aad(i int64, last bool) []byte {
	a := binary.BigEndian.AppendUint64([]byte("frame"), uint64(i))
	if last {
		return append(a, 1)
	}
	return append(a, 0)
}

// Encrypt returns a reader of r's bytes sealed under k.
func (k *Key) Encrypt(r io.Reader) io.Reader {
	return &sealer{k: k, r: r, in: make([]byte, 0, Frame+1)}
}

// sealer seals a stream frame by frame. It reads one byte past a frame to
// know whether the frame is the last.
type sealer struct {
	k    *Key
	r    io.Reader
	in   []byte // plaintext read ahead: a frame, and maybe the next byte
	out  []byte // sealed bytes not yet returned
	i    int64
	done bool // the last frame is sealed
	err  error
}

func (s *sealer) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.done || s.err != nil {
			if s.err != nil {
				return 0, s.err
			}
			return 0, io.EOF
		}
		s.fill()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// fill seals the next frame into out.
func (s *sealer) fill() {
	n, err := io.ReadFull(s.r, s.in[len(s.in):Frame+1])
	s.in = s.in[:len(s.in)+n]
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		s.err = err
		return
	}
	last := len(s.in) <= Frame
	m := min(len(s.in), Frame)
	s.out = s.k.aead.Seal(s.out[:0], nonce(s.i), s.in[:m], aad(s.i, last))
	s.i++
	s.in = append(s.in[:0], s.in[m:]...)
	s.done = last
}

// Opener is an io.Writer that takes the sealed bytes of whole frames of a
// segment of plain bytes, from frame first on, and writes the plaintext
// from skip bytes into the first frame, n bytes in all, to w. Close
// reports a frame left incomplete.
type Opener struct {
	k       *Key
	w       io.Writer
	plain   int64
	i       int64 // the frame being gathered
	buf     []byte
	skip, n int64
	plainB  []byte
}

// Range returns the sealed byte range [off, off+len) that holds the
// plaintext range [poff, poff+n) of a segment of plain bytes, and an
// Opener that writes that plaintext to w from those sealed bytes.
func (k *Key) Range(w io.Writer, plain, poff, n int64) (off, length int64, o *Opener) {
	first := poff / Frame
	last := first
	if n > 0 {
		last = (poff + n - 1) / Frame
	}
	off = first * (Frame + Overhead)
	end := min((last+1)*(Frame+Overhead), CipherSize(plain))
	return off, end - off, &Opener{k: k, w: w, plain: plain, i: first, skip: poff - first*Frame, n: n}
}

// frameLen is the sealed length of frame i.
func (o *Opener) frameLen(i int64) int {
	if i < Frames(o.plain)-1 {
		return Frame + Overhead
	}
	return int(o.plain-i*Frame) + Overhead
}

// Write gathers sealed bytes and opens each frame once whole.
func (o *Opener) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if o.i >= Frames(o.plain) {
			return 0, fmt.Errorf("seal: bytes past the last frame: %w", ErrOpen)
		}
		need := o.frameLen(o.i) - len(o.buf)
		take := min(need, len(p))
		o.buf = append(o.buf, p[:take]...)
		p = p[take:]
		if len(o.buf) == o.frameLen(o.i) {
			if err := o.open(); err != nil {
				return 0, err
			}
		}
	}
	return total, nil
}

// open opens the gathered frame and writes what the caller wants of it.
func (o *Opener) open() error {
	last := o.i == Frames(o.plain)-1
	pt, err := o.k.aead.Open(o.plainB[:0], nonce(o.i), o.buf, aad(o.i, last))
	if err != nil {
		return fmt.Errorf("seal: frame %d: %w", o.i, ErrOpen)
	}
	o.plainB, o.buf = pt, o.buf[:0]
	o.i++
	pt = pt[min(o.skip, int64(len(pt))):]
	o.skip = 0
	pt = pt[:min(o.n, int64(len(pt)))]
	o.n -= int64(len(pt))
	if len(pt) == 0 {
		return nil
	}
	_, err = o.w.Write(pt)
	return err
}

// Close reports sealed bytes that stopped inside a frame, or a range
// left short.
func (o *Opener) Close() error {
	if len(o.buf) != 0 || o.n != 0 {
		return fmt.Errorf("seal: the sealed bytes end inside a frame: %w", ErrOpen)
	}
	return nil
}
