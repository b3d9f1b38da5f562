package fuse

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/agentnas/nas/client"
)

// stream uploads a new file while it is being written: a file written
// from its start, only ever at its end (cp, dd, a download, a build
// output), is sent as a multipart upload whose parts go out as soon as
// they are full, so close waits only for the last part instead of for
// the whole file. Any other write, a truncation, or a failed part ends
// the stream (the upload is aborted) and close falls back to one PUT.
type stream struct {
	m   *Mount
	key string
	opt client.PutOptions

	// mu guards everything below.
	mu      sync.Mutex
	up      *client.Upload // created with the first full part
	sent    int64          // bytes given to parts
	parts   []client.Part  // in part-number order; zero ETag while in flight
	err     error          // the first failure: the stream is dead
	wg      sync.WaitGroup // parts in flight
	slots   chan struct{}  // bounds the parts in flight
	aborted bool
}

// Stream part size and parallelism: 16 MiB parts, four in flight (the
// bytes are read back from the staging file, so memory does not grow).
const (
	streamPart     = 16 << 20
	streamInflight = 4
)

func newStream(m *Mount, key string, opt client.PutOptions) *stream {
	return &stream{m: m, key: key, opt: opt, slots: make(chan struct{}, streamInflight)}
}

// grow sends every full part of the first size bytes of f. It blocks
// while the maximum number of parts is in flight.
func (s *stream) grow(f io.ReaderAt, size int64) {
	for {
		s.mu.Lock()
		if s.err != nil || size-s.sent < streamPart {
			s.mu.Unlock()
			return
		}
		if s.up == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			up, err := s.m.r.c.CreateUpload(ctx, s.m.r.obj(s.key), s.opt)
			cancel()
			if err != nil {
				s.err = err
				s.mu.Unlock()
				return
			}
			s.up = up
		}
		off := s.sent
		s.sent += streamPart
		n := len(s.parts) + 1
		s.parts = append(s.parts, client.Part{Number: n})
		s.wg.Add(1)
		up := s.up
		s.mu.Unlock()
		s.slots <- struct{}{}
		go func() {
			defer func() { <-s.slots; s.wg.Done() }()
			s.send(up, n, io.NewSectionReader(f, off, streamPart), streamPart)
		}()
	}
}

// send uploads one part and records its ETag (or the stream's failure).
func (s *stream) send(up *client.Upload, n int, body io.ReaderAt, size int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := s.m.r.c.UploadPart(ctx, up, n, body, size)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return
	}
	s.parts[n-1] = p
}

// finish sends the last size-sent bytes, waits for every part and
// completes the upload. ok is false when there is no upload to complete
// (the file stayed under one part) or the stream failed; the caller then
// PUTs the file, and the failed upload is aborted.
func (s *stream) finish(ctx context.Context, f io.ReaderAt, size int64) (client.Info, bool) {
	s.grow(f, size)
	s.mu.Lock()
	if s.up == nil || s.err != nil {
		s.mu.Unlock()
		s.abort()
		return client.Info{}, false
	}
	if rest := size - s.sent; rest > 0 {
		n := len(s.parts) + 1
		s.parts = append(s.parts, client.Part{Number: n})
		s.sent = size
		up := s.up
		s.wg.Add(1)
		s.mu.Unlock()
		func() {
			defer s.wg.Done()
			s.send(up, n, io.NewSectionReader(f, size-rest, rest), rest)
		}()
	} else {
		s.mu.Unlock()
	}
	s.wg.Wait()
	s.mu.Lock()
	err, up, parts := s.err, s.up, append([]client.Part(nil), s.parts...)
	s.mu.Unlock()
	if err != nil {
		s.abort()
		return client.Info{}, false
	}
	inf, err := s.m.r.c.CompleteUpload(ctx, up, parts)
	if err != nil {
		s.m.log.Debug("completing a streamed upload failed; sending the file whole", "key", s.key, "err", err)
		s.abort()
		return client.Info{}, false
	}
	s.mu.Lock()
	s.aborted = true // done: nothing left to abort
	s.mu.Unlock()
	return inf, true
}

// abort ends the stream and drops its upload (in the background).
func (s *stream) abort() {
	s.mu.Lock()
	if s.aborted {
		s.mu.Unlock()
		return
	}
	s.aborted = true
	if s.err == nil {
		s.err = errAborted
	}
	up := s.up
	s.mu.Unlock()
	if up == nil {
		return
	}
	go func() {
		s.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.m.r.c.AbortUpload(ctx, up); err != nil {
			s.m.log.Debug("aborting a streamed upload", "key", s.key, "err", err)
		}
	}()
}

// errAborted ends a stream that a non-sequential write made useless.
var errAborted = errorString("stream aborted")

type errorString string

func (e errorString) Error() string { return string(e) }
