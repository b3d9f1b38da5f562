package branch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/seal"
)

// Sealed content (the sensitive retention class). Its chunks hold what
// package seal makes of the plaintext under a key of the keyring, so
// every read of an object's bytes goes through ReadContent, which opens
// them; only the chunks' own bookkeeping (GC, fsck, copies that share
// whole chunks with their seal) looks at them as they are.

// ErrNoKeys is a sensitive write on a service without a keyring.
var ErrNoKeys = errors.New("this gateway has no keyring for sensitive content")

// SetKeys gives the service the keyring that seals sensitive content.
func (s *Service) SetKeys(r *keyring.Ring) { s.keys.Store(r) }

// Keys is the keyring (nil when none was set).
func (s *Service) Keys() *keyring.Ring { return s.keys.Load() }

// domainKey is the key sl names: keyring.ErrDestroyed once forgotten.
func (s *Service) domainKey(sl *manifest.Seal) ([]byte, error) {
	r := s.keys.Load()
	if r == nil {
		return nil, fmt.Errorf("sealed content: %w", ErrNoKeys)
	}
	return r.Key(sl.Domain, sl.KeyID)
}

// CheckContent fails, before a response starts, when c cannot be read:
// it is sealed under a key that was destroyed (or is not here).
func (s *Service) CheckContent(c *manifest.Content) error {
	if c == nil || c.Seal == nil {
		return nil
	}
	_, err := s.domainKey(c.Seal)
	return err
}

// ReadContent writes the plaintext bytes [off, off+n) of c to w: the
// chunks as they are, or opened when sealed.
func (s *Service) ReadContent(ctx context.Context, w io.Writer, c *manifest.Content, off, n int64) error {
	if c.Seal == nil {
		return s.chunks.ReadRefs(ctx, w, c.Chunks, off, n)
	}
	dk, err := s.domainKey(c.Seal)
	if err != nil || n <= 0 {
		return err
	}
	var plainAt, cipherAt int64
	for _, g := range c.Seal.Segments {
		from, to := max(off, plainAt), min(off+n, plainAt+g.Size)
		if from < to {
			if err := s.readSegment(ctx, w, c, dk, g, cipherAt, from-plainAt, to-from); err != nil {
				return err
			}
		}
		plainAt += g.Size
		cipherAt += seal.CipherSize(g.Size)
		if plainAt >= off+n {
			break
		}
	}
	return nil
}

// readSegment opens the plaintext [off, off+n) of segment g, whose sealed
// bytes start at base in c's chunks.
func (s *Service) readSegment(ctx context.Context, w io.Writer, c *manifest.Content, dk []byte, g manifest.SealSegment, base, off, n int64) error {
	k, err := seal.Derive(dk, g.Salt)
	if err != nil {
		return err
	}
	coff, clen, o := k.Range(w, g.Size, off, n)
	if err := s.chunks.ReadRefs(ctx, o, c.Chunks, base+coff, clen); err != nil {
		return err
	}
	return o.Close()
}

// Sealing seals the segments of one new object under a domain's current
// key.
type Sealing struct {
	seal *manifest.Seal
	key  []byte
}

// NewSealing starts sealing under domain's current key, creating it.
func (s *Service) NewSealing(domain string) (*Sealing, error) {
	r := s.keys.Load()
	if r == nil {
		return nil, ErrNoKeys
	}
	id, k, err := r.Current(domain)
	if err != nil {
		return nil, err
	}
	return &Sealing{seal: &manifest.Seal{Domain: domain, KeyID: id}, key: k}, nil
}

// Segment returns plain sealed as a new segment; size must report the
// plaintext bytes read once the returned reader is drained (Done does).
func (g *Sealing) Segment(plain io.Reader) (io.Reader, error) {
	salt := seal.NewSalt()
	k, err := seal.Derive(g.key, salt)
	if err != nil {
		return nil, err
	}
	g.seal.Segments = append(g.seal.Segments, manifest.SealSegment{Salt: salt})
	return k.Encrypt(plain), nil
}

// Done records the last segment's plaintext size and returns the seal.
func (g *Sealing) Done(size int64) *manifest.Seal {
	g.seal.Segments[len(g.seal.Segments)-1].Size = size
	return g.seal
}

// Ingest stores r's bytes as chunks of up, with tee (when set) seeing
// the plaintext: as they are when domain is "", else sealed under
// domain's current key, returning the seal. It returns the plaintext
// size.
func (s *Service) Ingest(ctx context.Context, up *cas.Upload, r io.Reader, tee io.Writer, domain string) ([]chunk.Ref, int64, *manifest.Seal, error) {
	if domain == "" {
		if tee == nil {
			tee = io.Discard
		}
		refs, n, err := up.IngestTee(ctx, r, tee)
		return refs, n, nil, err
	}
	g, err := s.NewSealing(domain)
	if err != nil {
		return nil, 0, nil, err
	}
	if tee != nil {
		r = io.TeeReader(r, tee)
	}
	plain := &countReader{r: r}
	sealed, err := g.Segment(plain)
	if err != nil {
		return nil, 0, nil, err
	}
	refs, _, err := up.Ingest(ctx, sealed)
	return refs, plain.n, g.Done(plain.n), err
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// SealBytes seals b, a small value kept beside content sealed under sl
// (a part's edges), under sl's key: a fresh salt, then the sealed bytes.
func (s *Service) SealBytes(sl *manifest.Seal, b []byte) ([]byte, error) {
	dk, err := s.domainKey(sl)
	if err != nil {
		return nil, err
	}
	salt := seal.NewSalt()
	k, err := seal.Derive(dk, salt)
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(k.Encrypt(bytes.NewReader(b)))
	return append(salt, out...), err
}

// OpenBytes opens what SealBytes sealed under sl.
func (s *Service) OpenBytes(sl *manifest.Seal, b []byte) ([]byte, error) {
	dk, err := s.domainKey(sl)
	if err != nil {
		return nil, err
	}
	if len(b) < seal.SaltSize+seal.Overhead {
		return nil, fmt.Errorf("sealed value of %d bytes: %w", len(b), seal.ErrOpen)
	}
	k, err := seal.Derive(dk, b[:seal.SaltSize])
	if err != nil {
		return nil, err
	}
	body := b[seal.SaltSize:]
	plain := int64(len(body)) - seal.Overhead*seal.Frames(int64(len(body))-seal.Overhead)
	if plain < 0 || seal.CipherSize(plain) != int64(len(body)) {
		return nil, fmt.Errorf("sealed value of %d bytes: %w", len(b), seal.ErrOpen)
	}
	var out bytes.Buffer
	_, _, o := k.Range(&out, plain, 0, plain)
	if _, err := o.Write(body); err != nil {
		return nil, err
	}
	return out.Bytes(), o.Close()
}
