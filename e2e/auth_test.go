package e2e_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/agentnas/nas/nastest"
)

// skewedSigner signs as if the client's clock were off by skew.
type skewedSigner struct {
	s    *v4.Signer
	skew time.Duration
}

func (s skewedSigner) SignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string,
	t time.Time, optFns ...func(*v4.SignerOptions)) error {
	return s.s.SignHTTP(ctx, creds, r, payloadHash, service, region, t.Add(s.skew), optFns...)
}

func (s skewedSigner) PresignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string,
	t time.Time, optFns ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return s.s.PresignHTTP(ctx, creds, r, payloadHash, service, region, t.Add(s.skew), optFns...)
}

func newSkewedSigner(skew time.Duration) skewedSigner {
	return skewedSigner{s: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }), skew: skew}
}

func TestAuth(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "guarded-auth"
	createBucket(t, c, b)
	data := randBytes("auth", 10<<10)
	put(t, c, b, "obj", data)
	wrongSecret := aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: "wrong-secret"}
	unknownKey := aws.Credentials{AccessKeyID: "AKIAUNKNOWNKEY000000", SecretAccessKey: nastest.SecretKey}

	t.Run("WrongSecret", func(t *testing.T) {
		bad := newS3(t, srv, clientOpts{creds: wrongSecret})
		_, _, err := tryGet(bad, b, "obj")
		wantErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		_, err = bad.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("obj"), Body: strings.NewReader("evil")})
		wantErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		_, err = bad.ListBuckets(ctx, &s3.ListBucketsInput{})
		wantErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		mc := newMinio(t, srv, func(o *minio.Options) { o.Creds = miniocreds.NewStaticV4(nastest.AccessKey, "wrong-secret", "") })
		_, err = mc.PutObject(ctx, b, "obj", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
		wantMinioErr(t, err, http.StatusForbidden, "SignatureDoesNotMatch")
		got, _ := get(t, c, b, "obj")
		wantBytes(t, got, data)
	})
	t.Run("UnknownKey", func(t *testing.T) {
		bad := newS3(t, srv, clientOpts{creds: unknownKey})
		_, _, err := tryGet(bad, b, "obj")
		wantErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
		mc := newMinio(t, srv, func(o *minio.Options) {
			o.Creds = miniocreds.NewStaticV4("AKIAUNKNOWNKEY000000", nastest.SecretKey, "")
		})
		_, err = mc.StatObject(ctx, b, "obj", minio.StatObjectOptions{})
		wantMinioErr(t, err, http.StatusForbidden, "")
		_, err = mc.ListBuckets(ctx)
		wantMinioErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
	})
	t.Run("SessionTokenWithOwnerKey", func(t *testing.T) {
		bad := newS3(t, srv, clientOpts{creds: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey, SessionToken: "bogus"}})
		_, _, err := tryGet(bad, b, "obj")
		wantErr(t, err, http.StatusBadRequest, "InvalidToken")
	})
	t.Run("Anonymous", func(t *testing.T) {
		for _, tc := range []struct{ method, path string }{
			{http.MethodGet, "/"},
			{http.MethodGet, "/" + b},
			{http.MethodGet, "/" + b + "/obj"},
			{http.MethodPut, "/" + b + "/obj"},
			{http.MethodDelete, "/" + b + "/obj"},
			{http.MethodGet, "/no-such-bucket/obj"},
		} {
			req, err := http.NewRequest(tc.method, srv.Endpoint+tc.path, strings.NewReader("anon"))
			must(t, err)
			status, _, body := do(t, req)
			if status != http.StatusForbidden || xmlCode(body) != "AccessDenied" {
				t.Errorf("anonymous %s %s: %d %s", tc.method, tc.path, status, body)
			}
		}
		resp, err := http.Head(srv.Endpoint + "/" + b + "/obj")
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous HEAD: %d", resp.StatusCode)
		}
		got, _ := get(t, c, b, "obj")
		wantBytes(t, got, data)
	})
	t.Run("Presigned", func(t *testing.T) {
		for _, region := range []string{regionA, regionB} {
			pc := s3.NewPresignClient(newS3(t, srv, clientOpts{region: region}))
			g, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("obj")}, s3.WithPresignExpires(5*time.Minute))
			must(t, err)
			resp, err := http.Get(g.URL)
			must(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("presigned GET (%s): %d %s", region, resp.StatusCode, body)
			}
			wantBytes(t, body, data)

			key := "presigned/é " + region
			p, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key)}, s3.WithPresignExpires(5*time.Minute))
			must(t, err)
			req, err := http.NewRequest(p.Method, p.URL, bytes.NewReader(data))
			must(t, err)
			for k, vs := range p.SignedHeader {
				if !strings.EqualFold(k, "host") {
					req.Header[k] = vs
				}
			}
			status, _, rb := do(t, req)
			if status != 200 {
				t.Fatalf("presigned PUT (%s): %d %s", region, status, rb)
			}
			got, _ := get(t, c, b, key)
			wantBytes(t, got, data)

			// The signature covers the key.
			u, _ := url.Parse(g.URL)
			u.Path = "/" + b + "/other"
			resp, err = http.Get(u.String())
			must(t, err)
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || xmlCode(body) != "SignatureDoesNotMatch" {
				t.Errorf("tampered presigned URL: %d %s", resp.StatusCode, body)
			}
		}
	})
	t.Run("PresignedExpired", func(t *testing.T) {
		pc := s3.NewPresignClient(c, func(o *s3.PresignOptions) { o.Presigner = newSkewedSigner(-time.Hour) })
		g, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("obj")}, s3.WithPresignExpires(10*time.Minute))
		must(t, err)
		resp, err := http.Get(g.URL)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || xmlCode(body) != "AccessDenied" {
			t.Errorf("expired presigned URL: %d %s", resp.StatusCode, body)
		}
		// Signed an hour ago but valid for two: still good.
		g, err = pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("obj")}, s3.WithPresignExpires(2*time.Hour))
		must(t, err)
		resp, err = http.Get(g.URL)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("presigned URL within its lifetime: %d", resp.StatusCode)
		}
	})
	t.Run("ClockSkew", func(t *testing.T) {
		for _, tc := range []struct {
			skew time.Duration
			ok   bool
		}{{-20 * time.Minute, false}, {20 * time.Minute, false}, {-10 * time.Minute, true}, {10 * time.Minute, true}} {
			sc := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){func(o *s3.Options) { o.HTTPSignerV4 = newSkewedSigner(tc.skew) }}})
			_, _, err := tryGet(sc, b, "obj")
			if tc.ok {
				if err != nil {
					t.Errorf("skew %v: %v", tc.skew, err)
				}
				continue
			}
			wantErr(t, err, http.StatusForbidden, "RequestTimeTooSkewed")
			// The same with a request signed by hand.
			status, _, body := do(t, rawRequest(t, http.MethodGet, srv.Endpoint+"/"+b+"/obj", nil, time.Now().Add(tc.skew), owner, nil))
			if status != http.StatusForbidden || xmlCode(body) != "RequestTimeTooSkewed" {
				t.Errorf("raw request skewed %v: %d %s", tc.skew, status, body)
			}
		}
	})
	t.Run("PayloadHashMismatch", func(t *testing.T) {
		req := rawRequest(t, http.MethodPut, srv.Endpoint+"/"+b+"/obj", []byte("signed body"), time.Now(), owner, nil)
		req.Body = io.NopCloser(strings.NewReader("other body!"))
		status, _, body := do(t, req)
		if status != http.StatusBadRequest || xmlCode(body) != "XAmzContentSHA256Mismatch" {
			t.Errorf("tampered body: %d %s", status, body)
		}
		got, _ := get(t, c, b, "obj")
		wantBytes(t, got, data)
	})
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// streamingPut builds a PUT whose body is aws-chunked and signed chunk by
// chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD), as minio-go sends over HTTP.
// tamper, if >= 0, flips a byte of that chunk after signing.
func streamingPut(t *testing.T, url string, chunks [][]byte, tamper int) *http.Request {
	t.Helper()
	const sigLen = 64
	total, encLen := 0, 0
	for _, c := range append(chunks, nil) {
		total += len(c)
		encLen += len(fmt.Sprintf("%x;chunk-signature=", len(c))) + sigLen + 2 + len(c) + 2
	}
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(make([]byte, encLen)))
	must(t, err)
	req.Header.Set("X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(total))
	req.Header.Set("Content-Encoding", "aws-chunked")
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	must(t, signer.SignHTTP(context.Background(), owner, req, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "s3", regionA, time.Now()))
	auth := req.Header.Get("Authorization")
	prev := auth[strings.LastIndex(auth, "Signature=")+len("Signature="):]
	amzDate := req.Header.Get("X-Amz-Date")
	scope := amzDate[:8] + "/" + regionA + "/s3/aws4_request"
	key := hmacSHA256(hmacSHA256(hmacSHA256(hmacSHA256([]byte("AWS4"+nastest.SecretKey), amzDate[:8]), regionA), "s3"), "aws4_request")
	empty := sha256.Sum256(nil)
	var body bytes.Buffer
	for i, c := range append(chunks, nil) {
		sum := sha256.Sum256(c)
		sts := strings.Join([]string{"AWS4-HMAC-SHA256-PAYLOAD", amzDate, scope, prev, hex.EncodeToString(empty[:]), hex.EncodeToString(sum[:])}, "\n")
		prev = hex.EncodeToString(hmacSHA256(key, sts))
		if i == tamper {
			c = bytes.Clone(c)
			c[len(c)/2] ^= 0xff
		}
		fmt.Fprintf(&body, "%x;chunk-signature=%s\r\n%s\r\n", len(c), prev, c)
	}
	if body.Len() != encLen {
		t.Fatalf("encoded %d bytes, announced %d", body.Len(), encLen)
	}
	req.Body = io.NopCloser(&body)
	return req
}

func TestStreamingSignatures(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "chunks"
	createBucket(t, c, b)
	chunks := [][]byte{randBytes("c1", 64<<10), randBytes("c2", 64<<10), randBytes("c3", 1000)}
	url := srv.Endpoint + "/" + b + "/obj"

	status, _, body := do(t, streamingPut(t, url, chunks, -1))
	if status != 200 {
		t.Fatalf("well-signed chunked PUT: %d %s", status, body)
	}
	got, _ := get(t, c, b, "obj")
	wantBytes(t, got, slices.Concat(chunks...))

	// A chunk changed in flight fails its signature; nothing is stored.
	for _, i := range []int{0, 1, 2} {
		status, _, body = do(t, streamingPut(t, url, [][]byte{randBytes("n1", 64<<10), randBytes("n2", 64<<10), randBytes("n3", 1000)}, i))
		if status != http.StatusForbidden || xmlCode(body) != "SignatureDoesNotMatch" {
			t.Errorf("chunk %d tampered: %d %s", i, status, body)
		}
		got, _ = get(t, c, b, "obj")
		wantBytes(t, got, slices.Concat(chunks...))
	}
}
