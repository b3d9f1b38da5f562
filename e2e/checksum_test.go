package e2e_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/nastest"
)

func TestPutChecksums(t *testing.T) {
	srv := nastest.Start(t)
	const b = "sums"
	tlsURL, tlsClient := startTLS(t, srv)
	httpRec := &recorder{base: http.DefaultTransport}
	tlsRec := &recorder{base: tlsClient.Transport}
	clients := map[string]*s3.Client{
		"http":  newS3(t, srv, clientOpts{httpClient: &http.Client{Transport: httpRec}}),
		"https": newS3(t, srv, clientOpts{endpoint: tlsURL, httpClient: &http.Client{Transport: tlsRec}, region: regionB}),
	}
	recs := map[string]*recorder{"http": httpRec, "https": tlsRec}
	ctx := context.Background()
	createBucket(t, clients["http"], b)
	data := randBytes("checksums", 300<<10+7)

	for _, scheme := range []string{"http", "https"} {
		c, rec := clients[scheme], recs[scheme]
		for _, alg := range []types.ChecksumAlgorithm{"", types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c,
			types.ChecksumAlgorithmCrc64nvme, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256} {
			name := string(alg)
			if alg == "" {
				name = "default"
			}
			t.Run(scheme+"/"+name, func(t *testing.T) {
				key := scheme + "/" + name
				out := put(t, c, b, key, data, func(in *s3.PutObjectInput) { in.ChecksumAlgorithm = alg })
				eff := alg
				if eff == "" {
					eff = types.ChecksumAlgorithmCrc32 // aws-sdk-go-v2's default
				}
				hdr := "X-Amz-Checksum-" + strings.ToUpper(string(eff)[:1]) + strings.ToLower(string(eff)[1:])
				req := rec.last()
				if scheme == "https" {
					// Over TLS the SDK streams the body unsigned, aws-chunked,
					// with the checksum in a trailer.
					if got := req.Get("X-Amz-Content-Sha256"); got != "STREAMING-UNSIGNED-PAYLOAD-TRAILER" {
						t.Errorf("x-amz-content-sha256 = %q", got)
					}
					if got := req.Get("X-Amz-Trailer"); !strings.EqualFold(got, hdr) {
						t.Errorf("x-amz-trailer = %q, want %s", got, hdr)
					}
				} else if got := req.Get(hdr); got != sumOf(eff, data) {
					t.Errorf("request %s = %q, want %q", hdr, got, sumOf(eff, data))
				}
				want := sumOf(eff, data)
				if got := checksumOf(eff, out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256); got != want {
					t.Errorf("PUT returned %s checksum %q, want %q", eff, got, want)
				}
				h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
				must(t, err)
				if got := checksumOf(eff, h.ChecksumCRC32, h.ChecksumCRC32C, h.ChecksumCRC64NVME, h.ChecksumSHA1, h.ChecksumSHA256); got != want || h.ChecksumType != types.ChecksumTypeFullObject {
					t.Errorf("HEAD %s checksum %q type %q, want %q FULL_OBJECT", eff, got, h.ChecksumType, want)
				}
				got, g := get(t, c, b, key, func(in *s3.GetObjectInput) { in.ChecksumMode = types.ChecksumModeEnabled })
				wantBytes(t, got, data)
				if sum := checksumOf(eff, g.ChecksumCRC32, g.ChecksumCRC32C, g.ChecksumCRC64NVME, g.ChecksumSHA1, g.ChecksumSHA256); sum != want {
					t.Errorf("GET %s checksum %q, want %q", eff, sum, want)
				}
				// A ranged GET carries no whole-object checksum.
				got, g = get(t, c, b, key, func(in *s3.GetObjectInput) {
					in.ChecksumMode = types.ChecksumModeEnabled
					in.Range = aws.String("bytes=100-199")
				})
				wantBytes(t, got, data[100:200])
				if g.ChecksumCRC32 != nil || g.ChecksumCRC32C != nil || g.ChecksumCRC64NVME != nil || g.ChecksumSHA1 != nil || g.ChecksumSHA256 != nil {
					t.Error("ranged GET returned a checksum")
				}
				// Without ChecksumMode there is none either.
				h, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
				must(t, err)
				if h.ChecksumCRC32 != nil || h.ChecksumSHA256 != nil || h.ChecksumCRC64NVME != nil {
					t.Error("HEAD without checksum mode returned a checksum")
				}
			})
		}
	}

	t.Run("https/empty", func(t *testing.T) {
		// An empty aws-chunked body: just the final chunk and the trailer.
		c := clients["https"]
		out := put(t, c, b, "https/empty", nil)
		if aws.ToString(out.ChecksumCRC32) != sumOf(types.ChecksumAlgorithmCrc32, nil) || aws.ToString(out.ETag) != etagOf(nil) {
			t.Errorf("empty PUT: crc32 %q etag %s", aws.ToString(out.ChecksumCRC32), aws.ToString(out.ETag))
		}
		got, _ := get(t, c, b, "https/empty")
		if len(got) != 0 {
			t.Errorf("empty object reads %d bytes", len(got))
		}
	})
	t.Run("https/multipart", func(t *testing.T) {
		// Parts sent with trailing checksums.
		c := clients["https"]
		p1, p2 := randBytes("tls-p1", 5*mib), randBytes("tls-p2", 100)
		m := createMPU(t, c, b, "https/mpu", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c })
		m.part(1, p1)
		if got := tlsRec.last().Get("X-Amz-Trailer"); !strings.EqualFold(got, "x-amz-checksum-crc32c") {
			t.Errorf("UploadPart over TLS: x-amz-trailer %q", got)
		}
		m.part(2, p2)
		out := m.complete()
		if want := compositeSum(types.ChecksumAlgorithmCrc32c, p1, p2); aws.ToString(out.ChecksumCRC32C) != want {
			t.Errorf("CRC32C %q, want %q", aws.ToString(out.ChecksumCRC32C), want)
		}
		got, _ := get(t, c, b, "https/mpu")
		wantBytes(t, got, slices.Concat(p1, p2))
	})

	other := []byte("not the body")
	md5sum := func(b []byte) string { s := md5.Sum(b); return base64.StdEncoding.EncodeToString(s[:]) }
	for _, scheme := range []string{"http", "https"} {
		c := clients[scheme]
		t.Run(scheme+"/Refused", func(t *testing.T) {
			key := scheme + "/refused"
			put(t, c, b, key, []byte("original"))
			for _, tc := range []struct {
				name, code string
				tune       func(*s3.PutObjectInput)
			}{
				{"WrongCRC32", "BadDigest", func(in *s3.PutObjectInput) { in.ChecksumCRC32 = aws.String(sumOf(types.ChecksumAlgorithmCrc32, other)) }},
				{"WrongSHA256", "BadDigest", func(in *s3.PutObjectInput) {
					in.ChecksumSHA256 = aws.String(sumOf(types.ChecksumAlgorithmSha256, other))
				}},
				{"WrongContentMD5", "BadDigest", func(in *s3.PutObjectInput) { in.ContentMD5 = aws.String(md5sum(other)) }},
				{"MalformedContentMD5", "InvalidDigest", func(in *s3.PutObjectInput) { in.ContentMD5 = aws.String("not base64!") }},
				{"ShortContentMD5", "InvalidDigest", func(in *s3.PutObjectInput) { in.ContentMD5 = aws.String("AAAA") }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(data)}
					tc.tune(in)
					_, err := c.PutObject(ctx, in)
					wantErr(t, err, http.StatusBadRequest, tc.code)
					got, _ := get(t, c, b, key)
					if string(got) != "original" {
						t.Errorf("a refused PUT changed the object to %d bytes", len(got))
					}
				})
			}
			// The right Content-MD5 is accepted.
			put(t, c, b, key, data, func(in *s3.PutObjectInput) { in.ContentMD5 = aws.String(md5sum(data)) })
		})
	}

	t.Run("RawHeaders", func(t *testing.T) {
		url := srv.Endpoint + "/" + b + "/raw"
		for _, tc := range []struct {
			name   string
			hdr    http.Header
			status int
			code   string
		}{
			{"InvalidValue", http.Header{"X-Amz-Checksum-Crc32": {"%%%"}}, 400, "BadDigest"},
			{"WrongLength", http.Header{"X-Amz-Checksum-Sha256": {sumOf(types.ChecksumAlgorithmCrc32, data)}}, 400, "BadDigest"},
			{"TwoAlgorithms", http.Header{"X-Amz-Checksum-Crc32": {sumOf(types.ChecksumAlgorithmCrc32, data)},
				"X-Amz-Checksum-Sha1": {sumOf(types.ChecksumAlgorithmSha1, data)}}, 400, "InvalidRequest"},
			{"UnknownSDKAlgorithm", http.Header{"X-Amz-Sdk-Checksum-Algorithm": {"MD4"}}, 400, "InvalidRequest"},
			{"Right", http.Header{"X-Amz-Checksum-Crc32c": {sumOf(types.ChecksumAlgorithmCrc32c, data)}}, 200, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				status, _, body := do(t, rawRequest(t, http.MethodPut, url, data, time.Now(), owner, tc.hdr))
				if status != tc.status || xmlCode(body) != tc.code {
					t.Errorf("got %d %q, want %d %q: %s", status, xmlCode(body), tc.status, tc.code, body)
				}
			})
		}
	})

	t.Run("UnsignedTrailer", func(t *testing.T) {
		// An aws-chunked STREAMING-UNSIGNED-PAYLOAD-TRAILER body written by
		// hand, with a right and a wrong trailing checksum.
		body := func(sum string) []byte {
			var buf bytes.Buffer
			for off := 0; off < len(data); off += 64 << 10 {
				chunk := data[off:min(off+64<<10, len(data))]
				fmt.Fprintf(&buf, "%x\r\n%s\r\n", len(chunk), chunk)
			}
			fmt.Fprintf(&buf, "0\r\nx-amz-checksum-sha256:%s\r\n\r\n", sum)
			return buf.Bytes()
		}
		hdr := func() http.Header {
			return http.Header{
				"X-Amz-Content-Sha256":         {"STREAMING-UNSIGNED-PAYLOAD-TRAILER"},
				"X-Amz-Trailer":                {"x-amz-checksum-sha256"},
				"X-Amz-Decoded-Content-Length": {strconv.Itoa(len(data))},
				"Content-Encoding":             {"aws-chunked"},
			}
		}
		url := srv.Endpoint + "/" + b + "/trailer"
		status, _, resp := do(t, rawRequest(t, http.MethodPut, url, body(sumOf(types.ChecksumAlgorithmSha256, data)), time.Now(), owner, hdr()))
		if status != 200 {
			t.Fatalf("right trailer: %d %s", status, resp)
		}
		status, _, resp = do(t, rawRequest(t, http.MethodPut, url, body(sumOf(types.ChecksumAlgorithmSha256, other)), time.Now(), owner, hdr()))
		if status != 400 || xmlCode(resp) != "BadDigest" {
			t.Errorf("wrong trailer: %d %s", status, resp)
		}
		got, g := get(t, clients["http"], b, "trailer", func(in *s3.GetObjectInput) { in.ChecksumMode = types.ChecksumModeEnabled })
		wantBytes(t, got, data)
		if aws.ToString(g.ChecksumSHA256) != sumOf(types.ChecksumAlgorithmSha256, data) || aws.ToString(g.ContentEncoding) != "" {
			t.Errorf("stored sha256 %q, content-encoding %q", aws.ToString(g.ChecksumSHA256), aws.ToString(g.ContentEncoding))
		}
	})
}

func TestMinioChecksums(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "minio-sums"
	createBucket(t, c, b)
	data := randBytes("minio-sums", 200<<10+1)
	tlsURL, tlsClient := startTLS(t, srv)
	tlsHost := strings.TrimPrefix(tlsURL, "https://")

	for _, tc := range []struct {
		name string
		mc   *minio.Client
		opts minio.PutObjectOptions
		alg  types.ChecksumAlgorithm // checksum expected on the object, if any
	}{
		{"md5", newMinio(t, srv), minio.PutObjectOptions{SendContentMd5: true}, ""},
		{"unsigned-payload", newMinio(t, srv), minio.PutObjectOptions{DisableContentSha256: true}, ""},
		{"trailer-crc32c", newMinio(t, srv, func(o *minio.Options) { o.TrailingHeaders = true }),
			minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C}, types.ChecksumAlgorithmCrc32c},
		{"trailer-sha256", newMinio(t, srv, func(o *minio.Options) { o.TrailingHeaders = true }),
			minio.PutObjectOptions{Checksum: minio.ChecksumSHA256}, types.ChecksumAlgorithmSha256},
		{"trailer-crc64nvme", newMinio(t, srv, func(o *minio.Options) { o.TrailingHeaders = true }),
			minio.PutObjectOptions{Checksum: minio.ChecksumCRC64NVME}, types.ChecksumAlgorithmCrc64nvme},
		{"trailer-sha1", newMinio(t, srv, func(o *minio.Options) { o.TrailingHeaders = true }),
			minio.PutObjectOptions{Checksum: minio.ChecksumSHA1}, types.ChecksumAlgorithmSha1},
		{"tls-trailer-crc32", newMinioAt(t, tlsHost, func(o *minio.Options) {
			o.Secure, o.Transport, o.TrailingHeaders = true, tlsClient.Transport, true
		}), minio.PutObjectOptions{Checksum: minio.ChecksumCRC32}, types.ChecksumAlgorithmCrc32},
		// For an empty body minio-go sends no trailer and no checksum value
		// (only x-amz-checksum-algorithm), so nothing is expected stored.
		{"trailer-empty", newMinio(t, srv, func(o *minio.Options) { o.TrailingHeaders = true }),
			minio.PutObjectOptions{Checksum: minio.ChecksumCRC32C}, ""},
		{"tls-md5", newMinioAt(t, tlsHost, func(o *minio.Options) { o.Secure, o.Transport = true, tlsClient.Transport }),
			minio.PutObjectOptions{SendContentMd5: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "m/" + tc.name
			data := data
			if strings.HasSuffix(tc.name, "empty") {
				data = []byte{}
			}
			info, err := tc.mc.PutObject(ctx, b, key, bytes.NewReader(data), int64(len(data)), tc.opts)
			must(t, err)
			if `"`+info.ETag+`"` != etagOf(data) {
				t.Errorf("ETag %s", info.ETag)
			}
			got, g := get(t, c, b, key, func(in *s3.GetObjectInput) { in.ChecksumMode = types.ChecksumModeEnabled })
			wantBytes(t, got, data)
			if tc.alg != "" {
				want := sumOf(tc.alg, data)
				if sum := checksumOf(tc.alg, g.ChecksumCRC32, g.ChecksumCRC32C, g.ChecksumCRC64NVME, g.ChecksumSHA1, g.ChecksumSHA256); sum != want {
					t.Errorf("stored %s = %q, want %q", tc.alg, sum, want)
				}
				st, err := tc.mc.StatObject(ctx, b, key, minio.StatObjectOptions{Checksum: true})
				must(t, err)
				if sum := checksumOf(tc.alg, &st.ChecksumCRC32, &st.ChecksumCRC32C, &st.ChecksumCRC64NVME, &st.ChecksumSHA1, &st.ChecksumSHA256); sum != want {
					t.Errorf("minio stat %s = %q, want %q", tc.alg, sum, want)
				}
			}
			obj, err := tc.mc.GetObject(ctx, b, key, minio.GetObjectOptions{})
			must(t, err)
			mgot, err := io.ReadAll(obj)
			must(t, err)
			wantBytes(t, mgot, data)
		})
	}
}
