package s3api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentnas/nas/s3api"
)

// signed builds a signed request once, so a benchmark loop measures the
// handler and not the signer.
func signed(tb testing.TB, method, target string, header http.Header, body []byte) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:9000"+target, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.RequestURI = target
	for k, vs := range header {
		req.Header[k] = vs
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	req.ContentLength = int64(len(body))
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: owner.AccessKey, SecretAccessKey: owner.SecretKey},
		req, h, "s3", "us-east-1", time.Now())
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// serve sends req (with body) to s and checks the status.
func serve(tb testing.TB, s *s3api.Server, req *http.Request, body []byte, want int) *httptest.ResponseRecorder {
	tb.Helper()
	req.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != want {
		tb.Fatalf("%s %s: %d, want %d: %s", req.Method, req.RequestURI, rec.Code, want, rec.Body.String())
	}
	return rec
}

// BenchmarkObject measures the object verbs whose code paths are the
// longest of the S3 edge: GET (whole, ranged, by part, missing), HEAD,
// UploadPartCopy and CompleteMultipartUpload, through the whole handler.
func BenchmarkObject(b *testing.B) {
	s := newServer(b)
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	serve(b, s, signed(b, "PUT", "/fuzz/obj", nil, data), data, http.StatusOK)
	get := func(name, target string, h http.Header, want int) {
		b.Run(name, func(b *testing.B) {
			req := signed(b, "GET", target, h, nil)
			b.ReportAllocs()
			for b.Loop() {
				serve(b, s, req, nil, want)
			}
		})
	}
	get("get", "/fuzz/obj", nil, http.StatusOK)
	get("get-range", "/fuzz/obj", http.Header{"Range": {"bytes=1000-99999"}}, http.StatusPartialContent)
	get("get-part", "/fuzz/obj?partNumber=1", nil, http.StatusOK)
	get("get-missing", "/fuzz/nothing", nil, http.StatusNotFound)
	b.Run("head", func(b *testing.B) {
		req := signed(b, "HEAD", "/fuzz/obj", nil, nil)
		b.ReportAllocs()
		for b.Loop() {
			serve(b, s, req, nil, http.StatusOK)
		}
	})
	b.Run("copy-complete", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			key := fmt.Sprintf("/fuzz/mp%d", i)
			rec := serve(b, s, signed(b, "POST", key+"?uploads", nil, nil), nil, http.StatusOK)
			var ini struct{ UploadId string }
			if err := xml.Unmarshal(rec.Body.Bytes(), &ini); err != nil {
				b.Fatal(err)
			}
			h := http.Header{"X-Amz-Copy-Source": {"/fuzz/obj"}, "X-Amz-Copy-Source-Range": {"bytes=1000-599999"}}
			rec = serve(b, s, signed(b, "PUT", key+"?partNumber=1&uploadId="+ini.UploadId, h, nil), nil, http.StatusOK)
			var part struct{ ETag string }
			if err := xml.Unmarshal(rec.Body.Bytes(), &part); err != nil {
				b.Fatal(err)
			}
			doc := []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>` + part.ETag + `</ETag></Part></CompleteMultipartUpload>`)
			serve(b, s, signed(b, "POST", key+"?uploadId="+ini.UploadId, nil, doc), doc, http.StatusOK)
		}
	})
}
