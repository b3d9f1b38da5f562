package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// sha256Hasher satisfies minio-go's md5simd.Hasher.
type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

func randomData(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func crc32cB64(b []byte) string {
	return crcB64(crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func crcB64(c uint32) string {
	return base64.StdEncoding.EncodeToString([]byte{byte(c >> 24), byte(c >> 16), byte(c >> 8), byte(c)})
}

// minioStream signs data with minio-go's StreamingSignV4 (with a signed
// trailer when trailer is set) and returns the request with the encoded
// stream materialised, so tests can mutate it.
func minioStream(t testing.TB, srv, path string, data []byte, trailer http.Header, at time.Time) (*http.Request, []byte) {
	t.Helper()
	req, err := http.NewRequest("PUT", srv+path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.GetBody = nil
	if trailer != nil {
		req.Trailer = trailer
	}
	req = signer.StreamingSignV4(req, testAK, testSK, "", testRegion, int64(len(data)), at, sha256Hasher{sha256.New()})
	stream, err := io.ReadAll(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return withBody(req, stream), stream
}

// withBody returns a copy of req sending body.
func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = nil
	if len(body) == 0 {
		r.Body = http.NoBody
	}
	return r
}

var streamSizes = []int{0, 1, 8191, 65535, 65536, 65537, 2*65536 + 5, 3<<20 + 17}

func TestMinioStreamingSigned(t *testing.T) {
	ts := newTestServer(t, fixedVerifier(t0), false)
	for _, n := range streamSizes {
		for _, withTrailer := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/trailer=%v", n, withTrailer), func(t *testing.T) {
				data := randomData(n, uint64(n))
				var trailer http.Header
				mode := Streaming
				if withTrailer {
					trailer = http.Header{"x-amz-checksum-crc32c": {crc32cB64(data)}}
					mode = StreamingTrailer
				}
				req, _ := minioStream(t, ts.URL, "/bucket/stream-"+fmt.Sprint(n), data, trailer, t0)
				o := ts.do(t, req)
				if o.err != nil {
					t.Fatalf("Verify: %v", o.err)
				}
				if o.bodyErr != nil || !bytes.Equal(o.body, data) {
					t.Fatalf("decoded %d bytes (want %d): %v", len(o.body), n, o.bodyErr)
				}
				if o.res.Mode != mode || o.res.DecodedLength != int64(n) || o.res.ContentEncoding != "" {
					t.Fatalf("result %+v", o.res)
				}
				if withTrailer {
					if got := o.trailer.Get("X-Amz-Checksum-Crc32c"); got != crc32cB64(data) {
						t.Fatalf("trailer %v", o.trailer)
					}
					if o.trailer.Get(trailerSigName) != "" {
						t.Fatalf("trailer signature leaked into Trailer: %v", o.trailer)
					}
				} else if o.trailer != nil {
					t.Fatalf("unexpected trailer %v", o.trailer)
				}
			})
		}
	}
}

// TestMinioStreamingMutations corrupts a valid signed stream in one place.
func TestMinioStreamingMutations(t *testing.T) {
	data := randomData(200<<10, 7) // 4 chunks: 3 full, one partial
	crc := crc32cB64(data)
	firstData := func(s []byte) int { return bytes.Index(s, []byte("\r\n")) + 2 }
	sigAt := func(s []byte, n int) int { // offset of the n-th chunk-signature value
		off := 0
		for i := 0; i <= n; i++ {
			off += bytes.Index(s[off:], []byte("chunk-signature=")) + len("chunk-signature=")
		}
		return off
	}
	flip := func(s []byte, i int) []byte {
		s = bytes.Clone(s)
		if s[i] == '0' {
			s[i] = '1'
		} else if isHex(s[i]) {
			s[i] = '0'
		} else {
			s[i] ^= 0x55
		}
		return s
	}
	tests := []struct {
		name    string
		trailer bool
		mutate  func(s []byte) []byte
		header  func(r *http.Request)
		err     error // from Verify
		bodyErr error
	}{
		{name: "unchanged"},
		{name: "unchanged with trailer", trailer: true},
		{name: "data byte", mutate: func(s []byte) []byte { return flip(s, firstData(s)+100) }, bodyErr: ErrSignatureMismatch},
		{name: "last data byte", mutate: func(s []byte) []byte { return flip(s, bytes.LastIndex(s, []byte("\r\n0;"))-1) }, bodyErr: ErrSignatureMismatch},
		{name: "first chunk signature", mutate: func(s []byte) []byte { return flip(s, sigAt(s, 0)+5) }, bodyErr: ErrSignatureMismatch},
		{name: "third chunk signature", mutate: func(s []byte) []byte { return flip(s, sigAt(s, 2)) }, bodyErr: ErrSignatureMismatch},
		{name: "final chunk signature", mutate: func(s []byte) []byte { return flip(s, sigAt(s, 4)+63) }, bodyErr: ErrSignatureMismatch},
		{name: "chunks swapped order", mutate: func(s []byte) []byte {
			// Replace chunk 2's signature by chunk 1's: a valid signature,
			// but not for this position in the chain.
			s = bytes.Clone(s)
			copy(s[sigAt(s, 1):sigAt(s, 1)+64], s[sigAt(s, 0):sigAt(s, 0)+64])
			return s
		}, bodyErr: ErrSignatureMismatch},
		{name: "signature removed", mutate: func(s []byte) []byte {
			i := sigAt(s, 1) - len(";chunk-signature=")
			return append(bytes.Clone(s[:i]), s[i+len(";chunk-signature=")+64:]...)
		}, bodyErr: ErrMalformedChunk},
		{name: "short signature", mutate: func(s []byte) []byte {
			i := sigAt(s, 1)
			return append(bytes.Clone(s[:i]), s[i+1:]...)
		}, bodyErr: ErrMalformedChunk},
		{name: "truncated in data", mutate: func(s []byte) []byte { return s[:len(s)/2] }, bodyErr: ErrIncompleteBody},
		{name: "truncated in header", mutate: func(s []byte) []byte { return s[:sigAt(s, 2)+10] }, bodyErr: ErrIncompleteBody},
		{name: "truncated before final chunk", mutate: func(s []byte) []byte { return s[:bytes.LastIndex(s, []byte("0;chunk"))] }, bodyErr: ErrIncompleteBody},
		{name: "final CRLF missing (tolerated)", mutate: func(s []byte) []byte { return s[:len(s)-2] }},
		{name: "garbage after end", mutate: func(s []byte) []byte { return append(bytes.Clone(s), "junk"...) }, bodyErr: ErrMalformedChunk},
		{name: "extra chunk after end", mutate: func(s []byte) []byte { return append(bytes.Clone(s), s[:200]...) }, bodyErr: ErrMalformedChunk},
		{name: "chunk size grown", mutate: func(s []byte) []byte { return append([]byte("10001"), s[5:]...) }, bodyErr: ErrMalformedChunk},
		{name: "CRLF after data replaced", mutate: func(s []byte) []byte {
			s = bytes.Clone(s)
			i := firstData(s) + 65536
			s[i], s[i+1] = 'x', 'y'
			return s
		}, bodyErr: ErrMalformedChunk},
		{name: "decoded length header changed", header: func(r *http.Request) { r.Header.Set("X-Amz-Decoded-Content-Length", "204799") }, err: ErrSignatureMismatch},
		{name: "decoded length garbage", header: func(r *http.Request) { r.Header.Set("X-Amz-Decoded-Content-Length", "-5") }, err: ErrMalformedChunk},
		{name: "seed signature", header: func(r *http.Request) {
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:len(a)-1]+string(flip([]byte(a), len(a)-1)[len(a)-1]))
		}, err: ErrSignatureMismatch},
		{name: "trailer value", trailer: true, mutate: func(s []byte) []byte {
			return bytes.Replace(s, []byte(crc), []byte(crcB64(12345)), 1)
		}, bodyErr: ErrSignatureMismatch},
		{name: "trailer signature", trailer: true, mutate: func(s []byte) []byte {
			return flip(s, bytes.Index(s, []byte(trailerSigName+":"))+len(trailerSigName)+3)
		}, bodyErr: ErrSignatureMismatch},
		{name: "trailer signature removed", trailer: true, mutate: func(s []byte) []byte {
			return s[:bytes.Index(s, []byte(trailerSigName))]
		}, bodyErr: ErrIncompleteBody},
		{name: "trailer added", trailer: true, mutate: func(s []byte) []byte {
			i := bytes.Index(s, []byte(trailerSigName))
			return append(append(bytes.Clone(s[:i]), "x-amz-meta-evil:1\r\n"...), s[i:]...)
		}, bodyErr: ErrSignatureMismatch},
		{name: "trailer after signature", trailer: true, mutate: func(s []byte) []byte {
			return append(bytes.Clone(s[:len(s)-2]), "x-amz-meta-evil:1\r\n\r\n"...)
		}, bodyErr: ErrMalformedChunk},
		{name: "trailer section too large", trailer: true, mutate: func(s []byte) []byte {
			i := bytes.Index(s, []byte(trailerSigName))
			var pad []byte
			for range 400 {
				pad = append(pad, "x-amz-meta-pad:0123456789012345678901234567890123456789\r\n"...)
			}
			return append(append(bytes.Clone(s[:i]), pad...), s[i:]...)
		}, bodyErr: ErrMalformedChunk},
		{name: "trailer in non-trailer mode", mutate: func(s []byte) []byte {
			return append(bytes.Clone(s[:len(s)-2]), "x-amz-checksum-crc32c:AAAAAA==\r\n\r\n"...)
		}, bodyErr: ErrMalformedChunk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, fixedVerifier(t0), false)
			var trailer http.Header
			if tt.trailer {
				trailer = http.Header{"x-amz-checksum-crc32c": {crc}}
			}
			req, stream := minioStream(t, ts.URL, "/bucket/obj", data, trailer, t0)
			if tt.mutate != nil {
				req = withBody(req, tt.mutate(stream))
			}
			if tt.header != nil {
				tt.header(req)
			}
			o := ts.do(t, req)
			if !errors.Is(o.err, tt.err) || (tt.err == nil) != (o.err == nil) {
				t.Fatalf("Verify err = %v, want %v", o.err, tt.err)
			}
			if o.err != nil {
				return
			}
			if !errors.Is(o.bodyErr, tt.bodyErr) || (tt.bodyErr == nil) != (o.bodyErr == nil) {
				t.Fatalf("body err = %v, want %v", o.bodyErr, tt.bodyErr)
			}
			if o.bodyErr == nil && !bytes.Equal(o.body, data) {
				t.Fatalf("decoded body differs")
			}
			if o.bodyErr != nil && o.trailer != nil {
				t.Fatalf("Trailer available after a failed body: %v", o.trailer)
			}
		})
	}
}

func isHex(c byte) bool { return unhex(c) >= 0 }

// unsignedTrailerBody encodes data the way the AWS SDKs do for
// STREAMING-UNSIGNED-PAYLOAD-TRAILER.
func unsignedTrailerBody(data []byte, chunk int, trailers string) []byte {
	var b bytes.Buffer
	for len(data) > 0 {
		n := min(chunk, len(data))
		fmt.Fprintf(&b, "%x\r\n", n)
		b.Write(data[:n])
		b.WriteString("\r\n")
		data = data[n:]
	}
	b.WriteString("0\r\n")
	b.WriteString(trailers)
	b.WriteString("\r\n")
	return b.Bytes()
}

func TestUnsignedTrailer(t *testing.T) {
	data := randomData(300<<10+3, 3)
	crc := crcB64(crc32.ChecksumIEEE(data))
	trailer := "x-amz-checksum-crc32:" + crc + "\r\n"
	good := unsignedTrailerBody(data, 64<<10, trailer)
	tests := []struct {
		name    string
		body    []byte
		decoded string
		bodyErr error
		want    []byte
	}{
		{name: "sdk format", body: good, want: data},
		{name: "one chunk", body: unsignedTrailerBody(data, len(data), trailer), want: data},
		{name: "tiny chunks", body: unsignedTrailerBody(data[:5000], 7, trailer), decoded: "5000", want: data[:5000]},
		{name: "empty payload", body: unsignedTrailerBody(nil, 1, "x-amz-checksum-crc32:AAAAAA==\r\n"), decoded: "0", want: []byte{}},
		{name: "no trailers", body: unsignedTrailerBody(data, 8192, ""), want: data},
		{name: "LF line ends and extensions", body: bytes.ReplaceAll(bytes.Replace(good, []byte("10000\r\n"), []byte("0010000 ;ext=1;chunk-signature=zz \n"), 1), []byte("0\r\nx-amz"), []byte("0;x\nx-amz")), want: data},
		{name: "upper-case hex size", body: bytes.Replace(good, []byte("4b003\r\n"), []byte("4B003\r\n"), 1), decoded: "", want: data},
		{name: "minio style trailer", body: append(bytes.Clone(good[:len(good)-len(trailer)-2]), "x-amz-checksum-crc32:"+crc+"\n\r\n\r\n"...), want: data},
		{name: "decoded length too small", body: good, decoded: fmt.Sprint(len(data) - 1), bodyErr: ErrMalformedChunk},
		{name: "decoded length too large", body: good, decoded: fmt.Sprint(len(data) + 1), bodyErr: ErrIncompleteBody},
		{name: "truncated", body: good[:len(good)-100], bodyErr: ErrIncompleteBody},
		{name: "truncated trailer line", body: good[:len(good)-5], bodyErr: ErrIncompleteBody},
		{name: "empty body", body: []byte{}, bodyErr: ErrIncompleteBody},
		{name: "bad size", body: append([]byte("zz\r\n"), good...), bodyErr: ErrMalformedChunk},
		{name: "size overflow", body: append([]byte("fffffffffffffffff\r\n"), good...), decoded: "", bodyErr: ErrMalformedChunk},
		{name: "negative-looking size", body: append([]byte("-1\r\n"), good...), bodyErr: ErrMalformedChunk},
		{name: "long header line", body: append([]byte("10;"+strings.Repeat("x", 5000)+"\r\n"), good...), bodyErr: ErrMalformedChunk},
		{name: "huge line without LF", body: []byte(strings.Repeat("1", 100<<10)), bodyErr: ErrMalformedChunk},
		{name: "bad trailer line", body: bytes.Replace(good, []byte("x-amz-checksum-crc32:"), []byte("x-amz-checksum-crc32 "), 1), bodyErr: ErrMalformedChunk},
		{name: "missing CRLF after data", body: bytes.Replace(good, []byte("\r\n10000\r\n"), []byte("\r\nX10000\r\n"), 1), bodyErr: ErrMalformedChunk},
	}
	ts := newTestServer(t, fixedVerifier(t0), false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decoded := tt.decoded
			if decoded == "" && tt.want != nil {
				decoded = fmt.Sprint(len(tt.want))
			}
			if decoded == "" && tt.bodyErr != nil && tt.name != "size overflow" {
				decoded = fmt.Sprint(len(data))
			}
			hdr := http.Header{
				"Content-Encoding": {"aws-chunked"},
				"X-Amz-Trailer":    {"x-amz-checksum-crc32"},
			}
			if decoded != "" {
				hdr.Set("X-Amz-Decoded-Content-Length", decoded)
			}
			req := newSDKRequest(t, ts.URL, "PUT", "/bucket/u", "x-id=PutObject", hdr, tt.body, streamingUnsignedTrail, creds, testRegion, t0)
			o := ts.do(t, req)
			if o.err != nil {
				t.Fatalf("Verify: %v", o.err)
			}
			if !errors.Is(o.bodyErr, tt.bodyErr) || (tt.bodyErr == nil) != (o.bodyErr == nil) {
				t.Fatalf("body err = %v, want %v", o.bodyErr, tt.bodyErr)
			}
			if tt.bodyErr != nil {
				return
			}
			if !bytes.Equal(o.body, tt.want) {
				t.Fatalf("decoded %d bytes, want %d", len(o.body), len(tt.want))
			}
			if o.res.Mode != StreamingUnsignedTrailer || o.res.ContentEncoding != "" {
				t.Fatalf("result %+v", o.res)
			}
			if strings.Contains(string(tt.body), crc) && o.trailer.Get("x-amz-checksum-crc32") != crc {
				t.Fatalf("trailer %v", o.trailer)
			}
		})
	}
}

// TestMinioUnsignedTrailer uses minio-go's own STREAMING-UNSIGNED-PAYLOAD-
// TRAILER path (SignV4Trailer), which signs with the wall clock.
func TestMinioUnsignedTrailer(t *testing.T) {
	ts := newTestServer(t, &Verifier{Lookup: testKeys}, false)
	for _, n := range []int{0, 1, 65536, 1<<20 + 1} {
		data := randomData(n, 5)
		req, _ := http.NewRequest("PUT", ts.URL+"/bucket/mu", bytes.NewReader(data))
		req.GetBody = nil
		req.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrail)
		req.Header.Set("Content-Encoding", "gzip")
		trailer := http.Header{"x-amz-checksum-crc32c": {crc32cB64(data)}}
		req = signer.SignV4Trailer(*req, testAK, testSK, "", testRegion, trailer)
		o := ts.do(t, req)
		if o.err != nil || o.bodyErr != nil || !bytes.Equal(o.body, data) {
			t.Fatalf("%d: Verify %v, body %v, %d bytes", n, o.err, o.bodyErr, len(o.body))
		}
		if o.trailer.Get("X-Amz-Checksum-Crc32c") != crc32cB64(data) || o.res.ContentEncoding != "gzip" {
			t.Fatalf("%d: trailer %v, encoding %q", n, o.trailer, o.res.ContentEncoding)
		}
	}
}

// TestMinioSTS uses minio-go's STS signing, which signs the body hash
// without sending x-amz-content-sha256.
func TestMinioSTS(t *testing.T) {
	ts := newTestServer(t, &Verifier{Lookup: testKeys}, false)
	body := "Action=AssumeRole&DurationSeconds=3600&Version=2011-06-15"
	req, _ := http.NewRequest("POST", ts.URL+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Amz-Content-Sha256", sha256Hex([]byte(body)))
	req = signer.SignV4STS(*req, testAK, testSK, testRegion)
	o := ts.do(t, req)
	if o.err != nil || o.bodyErr != nil || string(o.body) != body || o.res.Service != "sts" {
		t.Fatalf("Verify %v, body %v %q, result %+v", o.err, o.bodyErr, o.body, o.res)
	}
}
