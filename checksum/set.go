package checksum

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
)

// Request headers FromRequest reads.
const (
	headerContentMD5   = "Content-Md5"
	headerSDKAlgorithm = "X-Amz-Sdk-Checksum-Algorithm"
	headerTrailer      = "X-Amz-Trailer"
)

// Set collects the checksums one upload body must be hashed with and later
// checked against. Build it with FromRequest, copy the body through Writer,
// then call Verify with the trailers the body carried.
type Set struct {
	md5     bodyMD5
	wantMD5 []byte // decoded Content-MD5; nil when the client sent none

	alg     Algorithm // requested x-amz-checksum algorithm; "" when none
	h       hash.Hash // computes alg; nil when alg is ""
	want    []byte    // decoded header value; nil when absent
	trailer bool      // the value arrives as a trailer named alg.Header()
}

// FromRequest builds the Set for an upload from its headers: Content-MD5,
// at most one x-amz-checksum-<alg> header, x-amz-sdk-checksum-algorithm and
// x-amz-trailer. The headers x-amz-checksum-mode, x-amz-checksum-type and
// x-amz-checksum-algorithm (which belong to other operations) are ignored.
//
// It returns errors wrapping ErrInvalidDigest for a malformed Content-MD5,
// ErrInvalidAlgorithm for an unknown algorithm, ErrInvalidChecksum for a
// value of the wrong size and ErrMultipleChecksums when more than one
// algorithm is named.
func FromRequest(h http.Header) (*Set, error) {
	s := &Set{}

	if vs, ok := h[headerContentMD5]; ok {
		if len(vs) != 1 {
			return nil, fmt.Errorf("%w: %d Content-MD5 headers", ErrInvalidDigest, len(vs))
		}
		d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(vs[0]))
		if err != nil || len(d) != md5.Size {
			return nil, fmt.Errorf("%w: %q", ErrInvalidDigest, vs[0])
		}
		s.wantMD5 = d
	}

	var (
		value      string
		fromHeader bool
	)
	for k, vs := range h {
		lk := strings.ToLower(k)
		suffix, ok := strings.CutPrefix(lk, headerPrefix)
		if !ok || suffix == "mode" || suffix == "type" || suffix == "algorithm" {
			continue
		}
		a, err := Parse(suffix)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", lk, err)
		}
		if s.alg != "" || len(vs) != 1 {
			return nil, fmt.Errorf("%w: header %s", ErrMultipleChecksums, lk)
		}
		s.alg, value, fromHeader = a, vs[0], true
	}

	for _, v := range h.Values(headerTrailer) {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			suffix, ok := strings.CutPrefix(name, headerPrefix)
			if !ok {
				continue
			}
			a, err := Parse(suffix)
			if err != nil {
				return nil, fmt.Errorf("x-amz-trailer %s: %w", name, err)
			}
			if s.alg != "" {
				return nil, fmt.Errorf("%w: trailer %s", ErrMultipleChecksums, name)
			}
			s.alg, s.trailer = a, true
		}
	}

	if vs := h.Values(headerSDKAlgorithm); len(vs) > 0 {
		if len(vs) != 1 {
			return nil, fmt.Errorf("%w: %d x-amz-sdk-checksum-algorithm headers", ErrMultipleChecksums, len(vs))
		}
		a, err := Parse(strings.TrimSpace(vs[0]))
		if err != nil {
			return nil, fmt.Errorf("x-amz-sdk-checksum-algorithm: %w", err)
		}
		if s.alg != "" && s.alg != a {
			return nil, fmt.Errorf("%w: x-amz-sdk-checksum-algorithm %s with %s", ErrMultipleChecksums, a, s.alg)
		}
		s.alg = a
	}

	if s.alg == "" {
		return s, nil
	}
	s.h = s.alg.New()
	if fromHeader {
		d, err := decodeValue(s.alg, value)
		if err != nil {
			return nil, err
		}
		s.want = d
	}
	return s, nil
}

// decodeValue decodes a base64 checksum value and checks its size for a.
func decodeValue(a Algorithm, v string) ([]byte, error) {
	d, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
	if err != nil || len(d) != a.Size() {
		return nil, fmt.Errorf("%w: %s %q", ErrInvalidChecksum, a.Header(), v)
	}
	return d, nil
}

// Writer returns the writer that feeds the body to every hash of the Set.
// Its Write never fails.
func (s *Set) Writer() io.Writer { return setWriter{s} }

type setWriter struct{ s *Set }

func (w setWriter) Write(p []byte) (int, error) {
	w.s.md5.Write(p)
	if w.s.h != nil {
		w.s.h.Write(p)
	}
	return len(p), nil
}

// MD5 returns the MD5 of everything written so far; its hex form is the S3
// ETag of a single-part object.
func (s *Set) MD5() []byte { return s.md5.Sum() }

// Close ends the hashing of the body: it gives back what the MD5 held (a
// lane shared by concurrent uploads). Call it once MD5 and Verify are done
// with; Algorithm and Value still answer afterwards. Without Close, a large
// body's lane is lost to the ones that follow.
func (s *Set) Close() { s.md5.release() }

// Algorithm returns the x-amz-checksum algorithm the request asked for, and
// false when it named none.
func (s *Set) Algorithm() (Algorithm, bool) { return s.alg, s.alg != "" }

// Value returns the base64 checksum of everything written so far with the
// requested algorithm, the value to store and return to clients, or "" when
// the request named no algorithm.
func (s *Set) Value() string {
	if s.h == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(s.h.Sum(nil))
}

// Verify checks what was written against what the client sent, once the
// whole body went through Writer. trailer holds the trailers of an
// aws-chunked body (nil when there were none); it is consulted only when
// x-amz-trailer announced the checksum.
//
// It returns an error wrapping ErrBadDigest when Content-MD5 differs,
// ErrMissingTrailer when an announced trailer is absent, ErrInvalidChecksum
// when the trailer value is malformed, and a *MismatchError (wrapping
// ErrChecksumMismatch) when the checksum differs. When the client only named
// an algorithm, there is nothing to check and Verify returns nil.
func (s *Set) Verify(trailer http.Header) error {
	if s.wantMD5 != nil && !bytes.Equal(s.wantMD5, s.MD5()) {
		return ErrBadDigest
	}
	if s.h == nil {
		return nil
	}
	want := s.want
	if s.trailer {
		vs := trailer.Values(s.alg.Header())
		if len(vs) == 0 || strings.TrimSpace(vs[0]) == "" {
			return fmt.Errorf("%w: %s", ErrMissingTrailer, s.alg.Header())
		}
		if len(vs) > 1 {
			return fmt.Errorf("%w: %d %s trailers", ErrMultipleChecksums, len(vs), s.alg.Header())
		}
		d, err := decodeValue(s.alg, vs[0])
		if err != nil {
			return err
		}
		want = d
	}
	if want != nil && !bytes.Equal(want, s.h.Sum(nil)) {
		return &MismatchError{Algorithm: s.alg}
	}
	return nil
}
