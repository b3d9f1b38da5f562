package s3api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/castest"
	"github.com/agentnas/nas/s3api"
)

var owner = auth.Owner{AccessKey: "AKIAFUZZ", SecretKey: "fuzz-secret"}

func newServer(tb testing.TB) *s3api.Server {
	tb.Helper()
	chunks, db, _ := castest.Open(tb)
	b := branch.New(db, chunks, nil)
	ctx := context.Background()
	if _, err := b.CreateRepo(ctx, "fuzz", branch.CreateRepoOptions{}); err != nil {
		tb.Fatal(err)
	}
	if _, err := b.CreateBranch(ctx, "fuzz", "dev", "main"); err != nil {
		tb.Fatal(err)
	}
	return s3api.New(s3api.Config{Branches: b, Auth: auth.New(auth.Config{Owner: owner, Branches: b}), OwnerKey: owner.AccessKey})
}

// do sends a signed request straight to the handler.
func do(tb testing.TB, s *s3api.Server, method, target string, header http.Header, body []byte) *httptest.ResponseRecorder {
	tb.Helper()
	req, err := http.NewRequest(method, "http://127.0.0.1:9000"+target, bytes.NewReader(body))
	if err != nil {
		return nil
	}
	req.RequestURI = target
	for k, vs := range header {
		req.Header[k] = vs
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: owner.AccessKey, SecretAccessKey: owner.SecretKey},
		req, h, "s3", "us-east-1", time.Now())
	if err != nil {
		return nil
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

var methods = []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodHead}

// FuzzRequest throws arbitrary signed requests at the S3 handler: whatever
// the path, query, headers and body, the answer is never a 500 (which is
// also what a recovered panic becomes).
func FuzzRequest(f *testing.F) {
	f.Add(uint8(2), "/fuzz", "delete", "", []byte(`<Delete><Object><Key>a</Key></Object><Object><Key>b</Key><VersionId>zz</VersionId></Object></Delete>`))
	f.Add(uint8(2), "/fuzz/k", "uploadId=abc", "", []byte(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"x"</ETag></Part></CompleteMultipartUpload>`))
	f.Add(uint8(2), "/fuzz/k", "uploads", "", []byte{})
	f.Add(uint8(1), "/fuzz/a/../b//c%2Fd", "", "Content-MD5: xx", []byte("hello"))
	f.Add(uint8(1), "/fuzz/k", "partNumber=0&uploadId=x", "", []byte("p"))
	f.Add(uint8(0), "/fuzz", "list-type=2&max-keys=-1&delimiter=%2F&encoding-type=url", "", []byte{})
	f.Add(uint8(0), "/fuzz", "versions&key-marker=a&version-id-marker=zz", "", []byte{})
	f.Add(uint8(0), "/fuzz/k", "versionId=0123456789abcdef01234567", "Range: bytes=-0", []byte{})
	f.Add(uint8(1), "/fuzz/dst", "", "X-Amz-Copy-Source: /fuzz/src?versionId=%zz", []byte{})
	f.Add(uint8(1), "/fuzz_dev/k", "", "X-Nas-Branch: dev", []byte("x"))
	f.Add(uint8(1), "/fuzz", "versioning", "", []byte(`<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`))
	f.Add(uint8(4), "/fuzz/k", "partNumber=99999", "If-Modified-Since: garbage", []byte{})
	s := newServer(f)
	f.Fuzz(func(t *testing.T, m uint8, path, query, headers string, body []byte) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n#?") {
			return
		}
		h := http.Header{}
		for _, line := range strings.Split(headers, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && k != "" && !strings.ContainsAny(k, " \r\t") {
				h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
		}
		// The signer must cover the branch header or the server rightly
		// refuses it; keep other hop-by-hop headers out.
		h.Del("Host")
		h.Del("Content-Length")
		h.Del("Transfer-Encoding")
		h.Del("Authorization")
		target := path
		if query != "" {
			target += "?" + query
		}
		rec := do(t, s, methods[int(m)%len(methods)], target, h, body)
		if rec == nil {
			return
		}
		if rec.Code >= 500 && rec.Code != http.StatusNotImplemented && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s -> %d: %s", methods[int(m)%len(methods)], target, rec.Code, rec.Body.String())
		}
	})
}

func TestAliasRoundTrip(t *testing.T) {
	for _, b := range []string{"main", "exp/run-1", "a_b", "a_/b", "x/y/z", "a__b/c_"} {
		if err := branch.ValidBranchName(b); err != nil {
			continue
		}
		repo, got := s3api.ParseAlias(s3api.Alias("data", b))
		if repo != "data" || got != b {
			t.Errorf("alias of %q: got %q %q", b, repo, got)
		}
	}
}

func FuzzAlias(f *testing.F) {
	f.Add("exp/run-1")
	f.Add("a_b/c")
	f.Fuzz(func(t *testing.T, b string) {
		repo, br := s3api.ParseAlias("data_" + b)
		if repo != "data" {
			t.Fatalf("repo %q", repo)
		}
		if branch.ValidBranchName(b) == nil {
			if _, back := s3api.ParseAlias(s3api.Alias("data", b)); back != b {
				t.Fatalf("alias round trip of %q gave %q", b, back)
			}
		}
		_ = br
	})
}
