package sigv4

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig64)
	f.Add("AWS4-HMAC-SHA256 Signature=" + sig64 + ",Credential=a/b/20250314/r/sts/aws4_request,SignedHeaders=Host")
	f.Add("AWS AKID:sig")
	f.Add("AWS4-HMAC-SHA256 Credential=////,SignedHeaders=;;,Signature==")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseAuthorization(s)
		if err != nil {
			if !errors.Is(err, ErrMalformedAuth) && !errors.Is(err, ErrUnsupportedAuth) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
		} else {
			if a.cred.accessKey == "" || a.cred.region == "" || a.cred.service == "" || len(a.cred.date) != 8 {
				t.Fatalf("accepted incomplete credential %+v", a.cred)
			}
			host := false
			for _, h := range a.headers {
				host = host || h == "host"
			}
			if !host {
				t.Fatalf("accepted SignedHeaders without host: %q", a.signedHeaders)
			}
		}
		// The whole Verify path must not panic either.
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/b/k"}, Host: "h", Header: http.Header{
			"Authorization":        {s},
			"X-Amz-Date":           {"20130524T000000Z"},
			"X-Amz-Content-Sha256": {emptySHA256},
		}}
		if _, err := fixedVerifier(time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)).Verify(context.Background(), r); err == nil {
			t.Fatalf("fuzzed header verified: %q", s)
		}
	})
}

func FuzzPresignQuery(f *testing.F) {
	f.Add("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20250314%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250314T150926Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=" + sig64)
	f.Add("X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=-1&X-Amz-Date=x")
	f.Add("list-type=2&prefix=a+b%2F&uploads&&=&%zz")
	f.Add("AWSAccessKeyId=AK&Signature=x&Expires=1")
	f.Fuzz(func(t *testing.T, raw string) {
		ps := parseQuery(raw)
		canon := canonicalQuery(nil, ps, false)
		if again := canonicalQuery(nil, parseQuery(string(canon)), false); !bytes.Equal(canon, again) {
			t.Fatalf("canonical query not idempotent: %q -> %q -> %q", raw, canon, again)
		}
		r := &http.Request{Method: "GET", URL: &url.URL{Path: "/b/k", RawQuery: raw}, Host: "h", Header: http.Header{}}
		_, err := fixedVerifier(t0).Verify(context.Background(), r)
		if err == nil {
			t.Fatalf("fuzzed query verified: %q", raw)
		}
		for _, s := range []error{ErrMissingAuth, ErrMalformedAuth, ErrUnsupportedAuth, ErrUnknownKey, ErrInvalidToken,
			ErrSignatureMismatch, ErrRequestTimeTooSkewed, ErrExpired, ErrInvalidContentSHA256, ErrMalformedChunk} {
			if errors.Is(err, s) {
				return
			}
		}
		t.Fatalf("error %v wraps no sentinel", err)
	})
}

// FuzzChunkedReader feeds arbitrary bytes to the aws-chunked decoder in
// every mode; it must end in io.EOF or a sentinel error, never panic, and
// never return more bytes than it was given. It also checks that an
// unsigned stream encoded from the input decodes back to it.
func FuzzChunkedReader(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), uint8(0), int64(-1), uint16(7))
	f.Add([]byte("3;chunk-signature="+sig64+"\r\nabc\r\n0;chunk-signature="+sig64+"\r\n\r\n"), uint8(1), int64(3), uint16(1))
	f.Add([]byte("0;chunk-signature="+sig64+"\r\nx-amz-checksum-crc32:AAAAAA==\n\r\nx-amz-trailer-signature:"+sig64+"\r\n\r\n"), uint8(2), int64(0), uint16(100))
	f.Add([]byte("0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), uint8(0), int64(0), uint16(3))
	f.Add([]byte("ffffffffffffffff\r\n"), uint8(0), int64(-1), uint16(0))
	f.Fuzz(func(t *testing.T, in []byte, modeSel uint8, want int64, chunk uint16) {
		modes := []PayloadMode{StreamingUnsignedTrailer, Streaming, StreamingTrailer}
		mode := modes[int(modeSel)%len(modes)]
		if want < -1 {
			want = -1
		}
		c := newChunkedReader(io.NopCloser(bytes.NewReader(in)), mode, want)
		if mode != StreamingUnsignedTrailer {
			var seed [32]byte
			c.sign(SigningKey(testSK, "20250314", testRegion, "s3"), "20250314T150926Z", "20250314/us-east-1/s3/aws4_request", seed)
		}
		out, err := readAllSmall(c)
		if len(out) > len(in) {
			t.Fatalf("decoded %d bytes from %d", len(out), len(in))
		}
		if err != nil && !errors.Is(err, ErrMalformedChunk) && !errors.Is(err, ErrIncompleteBody) && !errors.Is(err, ErrSignatureMismatch) {
			t.Fatalf("error %v wraps no sentinel", err)
		}
		if err == nil && want >= 0 && int64(len(out)) != want {
			t.Fatalf("decoded %d bytes, declared %d", len(out), want)
		}
		if c.trailerSz > maxTrailerBytes {
			t.Fatalf("trailers grew to %d bytes", c.trailerSz)
		}
		c.Close()

		// Round trip: in as payload, in chunks of chunk bytes.
		size := int(chunk)%(64<<10) + 1
		enc := unsignedTrailerBody(in, size, "x-amz-checksum-crc32:AAAAAA==\r\n")
		d := newChunkedReader(io.NopCloser(bytes.NewReader(enc)), StreamingUnsignedTrailer, int64(len(in)))
		got, err := readAllSmall(d)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("round trip with %d-byte chunks: %v, %d of %d bytes", size, err, len(got), len(in))
		}
		if d.trailer.Get("X-Amz-Checksum-Crc32") != "AAAAAA==" {
			t.Fatalf("round trip trailer %v", d.trailer)
		}
	})
}

func TestChunkedReaderCloseAndSmallReads(t *testing.T) {
	enc := unsignedTrailerBody([]byte("hello world"), 3, "")
	c := newChunkedReader(io.NopCloser(bytes.NewReader(enc)), StreamingUnsignedTrailer, 11)
	var out []byte
	one := make([]byte, 1)
	for {
		n, err := c.Read(one)
		out = append(out, one[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if string(out) != "hello world" {
		t.Fatalf("got %q", out)
	}
	if n, err := c.Read(one); n != 0 || err != io.EOF {
		t.Fatalf("read after EOF: %d, %v", n, err)
	}
	c.Close()

	c = newChunkedReader(io.NopCloser(bytes.NewReader(enc)), StreamingUnsignedTrailer, 11)
	c.Read(one)
	c.Close()
	if _, err := c.Read(one); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Fatalf("read after close: %v", err)
	}
	if n, err := c.Read(nil); n != 0 || err == nil {
		t.Fatalf("zero read after close: %d %v", n, err)
	}
}
