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
// copy), writing the bytes to w (the part's digests) on the way.
// The caller refunds the copy's charges when it fails.
func (s *Server) copyLazy(req *request, cu *cas.Upload, w io.Writer, src *manifest.Entry, rng byteRange) ([]chunk.Ref, error) {
	r, err := s.openLazy(req, src, rng, nil)
	if err != nil || r == nil {
		return nil, err
	}
	defer r.Close()
	pr, pw := io.Pipe()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		pw.CloseWithError(r.Copy(req.ctx(), pw))
	}()
	refs, _, err := cu.IngestTee(req.ctx(), pr, w)
	// A failed ingest returns before Copy ends; r is not safe for
	// concurrent use, so Close (deferred) must wait for it: closing the
	// pipe makes Copy's next write fail, and its remote read is bounded by
	// ctx and the source's stall timer.
	pr.CloseWithError(err)
	<-copied
	return refs, err
}
