package s3api

import (
	"io"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/source"
)

// Lazy entries stand for objects of an attached source (package source):
// they hold no chunks, and their bytes come through the materializer,
// which fetches what is not local yet. Everything else about them
// (listing, HEAD, conditions, copies, deletes) is an ordinary entry.

// contentOf returns e's chunk list; a lazy entry has none locally.
func (s *Server) contentOf(req *request, e *manifest.Entry) (*manifest.Content, error) {
	if e.Lazy() {
		return &manifest.Content{}, nil
	}
	return s.ms.Content(req.ctx(), e)
}

// openLazy prepares the read of rng of a lazy entry (nil for any other):
// a remote that is down, a drifted object or a detached source fail here,
// before the status is written, and the read's charge is given back.
func (s *Server) openLazy(req *request, e *manifest.Entry, rng byteRange, charge *auth.Charge) (*source.Reader, error) {
	if !e.Lazy() || rng.length == 0 {
		return nil, nil
	}
	if s.lazy == nil {
		return nil, errServiceUnavailable("this object lives in an attached source, and sources are not enabled on this gateway")
	}
	r, err := s.lazy.Open(req.ctx(), e, rng.start, rng.length)
	if err != nil {
		charge.Refund(req.ctx())
		return nil, err
	}
	return r, nil
}

// copyLazy stores rng of lazy entry src as new chunks of cu (a part
// copy), sealed under domain when set, writing the plaintext to w (the
// part's digests) on the way. The caller refunds the copy's charges when
// it fails.
func (s *Server) copyLazy(req *request, cu *cas.Upload, w io.Writer, src *manifest.Entry, rng byteRange, domain string) ([]chunk.Ref, *manifest.Seal, error) {
	r, err := s.openLazy(req, src, rng, nil)
	if err != nil {
		return nil, nil, err
	}
	if r == nil { // an empty range: sealed, it is still one (empty) frame
		return s.ingestFrom(req, cu, w, domain, func(io.Writer) error { return nil })
	}
	defer r.Close()
	return s.ingestFrom(req, cu, w, domain, func(pw io.Writer) error { return r.Copy(req.ctx(), pw) })
}

// ingestFrom stores what produce writes as new chunks of cu, sealed under
// domain when set, with w seeing the plaintext. It returns once produce
// has stopped: a failed ingest closes the pipe, which makes produce's
// next write fail.
func (s *Server) ingestFrom(req *request, cu *cas.Upload, w io.Writer, domain string, produce func(io.Writer) error) ([]chunk.Ref, *manifest.Seal, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(produce(pw))
	}()
	refs, _, sl, err := s.ingestMaybeSealed(req, cu, pr, w, domain)
	pr.CloseWithError(err)
	<-done
	return refs, sl, err
}
