package adapter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Server is what an adapter written in Go implements; Serve speaks the
// protocol for it. An error that is an *Error is answered with its code,
// any other as CodeUnavailable.
type Server interface {
	// Name names the adapter in the hello answer.
	Name() string
	// List returns at most limit objects whose key is greater than after,
	// in byte order of keys, and whether others follow.
	List(ctx context.Context, after string, limit int) ([]Object, bool, error)
	// Stat returns what key is now.
	Stat(ctx context.Context, key string) (Object, error)
	// Read returns bytes [off, off+n) of version of key (fewer where the
	// object ends) and how many it will return, or CodeChanged when key
	// is no longer version.
	Read(ctx context.Context, key, version string, off, n int64) (io.ReadCloser, int64, error)
}

// Serve answers the requests read from in on out until in ends (nil) or a
// request cannot be answered in step (the error).
func Serve(ctx context.Context, in io.Reader, out io.Writer, s Server) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	w := bufio.NewWriterSize(out, 256<<10)
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			if err := answer(w, Response{Error: &Error{Code: CodeInvalid, Message: err.Error()}}); err != nil {
				return err
			}
			continue
		}
		if err := serveOne(ctx, w, s, req); err != nil {
			return err
		}
	}
	return sc.Err()
}

// serveOne answers one request; an error is one the stream cannot go on
// after.
func serveOne(ctx context.Context, w *bufio.Writer, s Server, req Request) error {
	var res Response
	switch req.Op {
	case OpHello:
		res = Response{Protocol: Protocol, Name: s.Name()}
	case OpList:
		limit := req.Limit
		if limit <= 0 || limit > MaxPage {
			limit = MaxPage
		}
		objs, more, err := s.List(ctx, req.After, limit)
		res = Response{Objects: objs, More: more, Error: coded(err)}
	case OpStat:
		o, err := s.Stat(ctx, req.Key)
		res = Response{Object: &o, Error: coded(err)}
		if err != nil {
			res.Object = nil
		}
	case OpRead:
		return serveRead(ctx, w, s, req)
	default:
		res = Response{Error: &Error{Code: CodeInvalid, Message: fmt.Sprintf("unknown op %q", req.Op)}}
	}
	return answer(w, res)
}

func serveRead(ctx context.Context, w *bufio.Writer, s Server, req Request) error {
	if req.Offset < 0 || req.Length < 0 || req.Offset > MaxSize || req.Length > MaxSize {
		return answer(w, Response{Error: &Error{Code: CodeInvalid, Message: "offset and length must be within 0-5 TiB"}})
	}
	rc, n, err := s.Read(ctx, req.Key, req.Version, req.Offset, req.Length)
	if err != nil {
		return answer(w, Response{Error: coded(err)})
	}
	defer rc.Close()
	if n < 0 || n > req.Length {
		return fmt.Errorf("read of %q: %d bytes announced for a range of %d", req.Key, n, req.Length)
	}
	if err := line(w, Response{Length: n, Version: req.Version}); err != nil {
		return err
	}
	// Once the length is announced, the bytes must follow: a source that
	// fails now cannot say so in step, so the stream ends.
	if got, err := io.CopyN(w, rc, n); err != nil {
		return fmt.Errorf("read of %q: %d of %d bytes: %w", req.Key, got, n, err)
	}
	return w.Flush()
}

// coded turns err into the Error answered for it.
func coded(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeUnavailable, Message: err.Error()}
}

func line(w *bufio.Writer, res Response) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}

func answer(w *bufio.Writer, res Response) error {
	if err := line(w, res); err != nil {
		return err
	}
	return w.Flush()
}
