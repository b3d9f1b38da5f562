package sigv4

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/minio/minio-go/v7/pkg/signer"
)

func BenchmarkVerifyHeader(b *testing.B) {
	r := httptest.NewRequest("GET", "/bucket/some/object/key.txt?versionId=abc&partNumber=2", nil)
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("X-Amz-Meta-A", "value")
	r.Header.Set("Range", "bytes=0-1023")
	if err := s3Signer.SignHTTP(context.Background(), creds, r, emptySHA256, "s3", testRegion, t0); err != nil {
		b.Fatal(err)
	}
	v := fixedVerifier(t0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkChunkedReader decodes a 16 MiB signed aws-chunked body in 64 KiB
// chunks (minio-go's layout), verifying every chunk signature.
func BenchmarkChunkedReader(b *testing.B) {
	for _, tc := range []struct {
		name   string
		signed bool
	}{{"signed", true}, {"unsigned", false}} {
		b.Run(tc.name, func(b *testing.B) {
			data := randomData(16<<20, 1)
			req := httptest.NewRequest("PUT", "/bucket/big", nil)
			var stream []byte
			if tc.signed {
				req.Body = io.NopCloser(bytes.NewReader(data))
				req = signer.StreamingSignV4(req, testAK, testSK, "", testRegion, int64(len(data)), t0, sha256Hasher{sha256.New()})
				stream, _ = io.ReadAll(req.Body)
			} else {
				stream = unsignedTrailerBody(data, 64<<10, "x-amz-checksum-crc32:AAAAAA==\r\n")
				req.Header.Set("X-Amz-Content-Sha256", streamingUnsignedTrail)
				req.Header.Set("X-Amz-Decoded-Content-Length", "16777216")
				if err := s3Signer.SignHTTP(context.Background(), creds, req, streamingUnsignedTrail, "s3", testRegion, t0); err != nil {
					b.Fatal(err)
				}
			}
			v := fixedVerifier(t0)
			buf := make([]byte, 256<<10)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				req.Body = io.NopCloser(bytes.NewReader(stream))
				res, err := v.Verify(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.CopyBuffer(io.Discard, onlyReader{res.Body}, buf); err != nil || n != int64(len(data)) {
					b.Fatal(n, err)
				}
				res.Body.Close()
			}
		})
	}
}

// onlyReader hides WriterTo/ReaderFrom so CopyBuffer uses buf.
type onlyReader struct{ io.Reader }
