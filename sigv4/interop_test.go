package sigv4

import (
	"context"
	"crypto/md5"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// interopRecord is one request a command-line client made.
type interopRecord struct {
	method, target string
	mode           PayloadMode
	n              int
	err            error
}

// interopServer verifies every request and answers like a minimal S3.
type interopServer struct {
	*httptest.Server
	mu      sync.Mutex // guards recs and objects
	recs    []interopRecord
	objects map[string]interopObject // by path
}

type interopObject struct {
	size int
	etag string
}

func newInteropServer(t *testing.T, tls bool) *interopServer {
	s := &interopServer{objects: map[string]interopObject{}}
	v := &Verifier{Lookup: testKeys}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := interopRecord{method: r.Method, target: r.RequestURI}
		res, err := v.Verify(r.Context(), r)
		var etag string
		if err == nil {
			rec.mode = res.Mode
			var b []byte
			b, err = io.ReadAll(res.Body)
			rec.n = len(b)
			etag = fmt.Sprintf(`"%x"`, md5.Sum(b))
		}
		io.Copy(io.Discard, r.Body)
		rec.err = err
		s.mu.Lock()
		s.recs = append(s.recs, rec)
		s.mu.Unlock()
		if err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>`+strings.ReplaceAll(err.Error(), "<", "")+`</Message></Error>`)
			return
		}
		w.Header().Set("Last-Modified", "Fri, 14 Mar 2025 15:09:26 GMT")
		q := r.URL.Query()
		s.mu.Lock()
		obj, found := s.objects[r.URL.Path]
		s.mu.Unlock()
		switch {
		case r.Method == "POST" && q.Has("uploads"):
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>bucket</Bucket><Key>k</Key><UploadId>upload-1</UploadId></InitiateMultipartUploadResult>`)
		case r.Method == "POST" && q.Has("uploadId"):
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>bucket</Bucket><Key>k</Key><ETag>"x-2"</ETag></CompleteMultipartUploadResult>`)
		case r.Method == "PUT" && q.Has("uploadId"):
			w.Header().Set("ETag", etag)
		case r.Method == "PUT" && r.Header.Get("X-Amz-Copy-Source") != "":
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><CopyObjectResult><ETag>`+obj.etag+`</ETag><LastModified>2025-03-14T15:09:26.000Z</LastModified></CopyObjectResult>`)
		case r.Method == "PUT":
			s.mu.Lock()
			s.objects[r.URL.Path] = interopObject{size: rec.n, etag: etag}
			s.mu.Unlock()
			w.Header().Set("ETag", etag)
		case r.Method == "HEAD" && !found:
			w.WriteHeader(http.StatusNotFound)
		case q.Has("location"):
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></LocationConstraint>`)
		case r.Method == "GET" && (q.Has("list-type") || strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0):
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`)
		case r.Method == "HEAD":
			w.Header().Set("ETag", obj.etag)
			w.Header().Set("Content-Length", fmt.Sprint(obj.size))
		}
	})
	if tls {
		s.Server = httptest.NewTLSServer(h)
	} else {
		s.Server = httptest.NewServer(h)
	}
	t.Cleanup(s.Close)
	return s
}

// TestCommandLineClients runs the S3 command-line clients installed on the
// machine (aws CLI, boto3, s3cmd, rclone) against a verifying server. It is
// skipped for each tool that is missing and in -short mode.
func TestCommandLineClients(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs external clients")
	}
	dir := t.TempDir()
	keys := []string{"plain.txt", "dir/with space+plus.bin", "ünï/€ (1).txt", "a//b/../c", "tilde~!*'()"}
	sizes := map[string]int{"small": 1000, "empty": 0, "big": 3<<20 + 5, "multipart": 9<<20 + 1}
	files := []string{"small", "empty", "big"}
	fileFor := func(i int) string { return filepath.Join(dir, files[i%len(files)]) }
	for name, n := range sizes {
		if err := os.WriteFile(filepath.Join(dir, name), randomData(n, uint64(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, e := range os.Environ() {
		// A CA bundle meant for outside hosts breaks rclone's client setup.
		if !strings.HasPrefix(e, "AWS_") {
			env = append(env, e)
		}
	}
	env = append(env,
		"AWS_ACCESS_KEY_ID="+testAK, "AWS_SECRET_ACCESS_KEY="+testSK, "AWS_DEFAULT_REGION="+testRegion,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "HOME="+dir)

	type tool struct {
		name string
		bin  string
		tls  bool
		cmds func(endpoint, host string) [][]string
	}
	tools := []tool{
		{"aws-cli", "aws", false, func(ep, _ string) [][]string {
			var c [][]string
			for i, k := range keys {
				c = append(c, []string{"aws", "--endpoint-url", ep, "s3", "cp", fileFor(i), "s3://bucket/" + k})
			}
			c = append(c, []string{"aws", "--endpoint-url", ep, "s3api", "list-objects-v2", "--bucket", "bucket", "--prefix", keys[2]})
			c = append(c, []string{"aws", "--endpoint-url", ep, "s3", "cp", filepath.Join(dir, "multipart"), "s3://bucket/" + keys[1]})
			return c
		}},
		{"aws-cli-tls", "aws", true, func(ep, _ string) [][]string {
			var c [][]string
			for i, k := range keys {
				c = append(c, []string{"aws", "--no-verify-ssl", "--endpoint-url", ep, "s3", "cp", fileFor(i + 1), "s3://bucket/" + k})
			}
			c = append(c, []string{"aws", "--no-verify-ssl", "--endpoint-url", ep, "s3", "cp", filepath.Join(dir, "multipart"), "s3://bucket/" + keys[2]})
			return c
		}},
		{"boto3", "python3", true, func(ep, _ string) [][]string {
			script := `
import sys, boto3, botocore, urllib3
urllib3.disable_warnings()
from botocore.config import Config
for style in ("path", "virtual"):
    s3 = boto3.client("s3", endpoint_url=sys.argv[1], verify=False, config=Config(s3={"addressing_style": style}, retries={"max_attempts": 1}))
    for key in sys.argv[2:]:
        s3.put_object(Bucket="bucket", Key=key, Body=b"x" * 70000, Metadata={"m": "  a   b "})
        s3.put_object(Bucket="bucket", Key=key, Body=b"", ChecksumAlgorithm="SHA256")
        s3.put_object(Bucket="bucket", Key=key, Body=b"y" * 1000, ChecksumAlgorithm="CRC32")
        s3.list_objects_v2(Bucket="bucket", Prefix=key, Delimiter="/")
`
			return [][]string{append([]string{"python3", "-c", script, ep}, keys...)}
		}},
		{"s3cmd", "s3cmd", false, func(_, host string) [][]string {
			var c [][]string
			base := []string{"s3cmd", "--access_key=" + testAK, "--secret_key=" + testSK, "--host=" + host, "--host-bucket=" + host, "--no-ssl", "--region=" + testRegion, "--config=/dev/null", "--no-check-md5"}
			for i, k := range keys {
				c = append(c, append(append([]string{}, base...), "put", fileFor(i), "s3://bucket/"+k))
			}
			c = append(c, append(append([]string{}, base...), "ls", "s3://bucket/"))
			return c
		}},
		{"rclone", "rclone", false, func(ep, _ string) [][]string {
			var c [][]string
			base := []string{"rclone", "--config=/dev/null", "--s3-provider=Other", "--s3-access-key-id=" + testAK, "--s3-secret-access-key=" + testSK, "--s3-endpoint=" + ep, "--s3-region=" + testRegion, "--retries=1", "--low-level-retries=1"}
			for i, k := range keys {
				c = append(c, append(append([]string{}, base...), "copyto", fileFor(i), ":s3:bucket/"+k))
			}
			c = append(c, append(append([]string{}, base...), "lsf", ":s3:bucket/"))
			return c
		}},
	}
	for _, tl := range tools {
		t.Run(tl.name, func(t *testing.T) {
			if _, err := exec.LookPath(tl.bin); err != nil {
				t.Skipf("%s not installed", tl.bin)
			}
			s := newInteropServer(t, tl.tls)
			host := strings.TrimPrefix(strings.TrimPrefix(s.URL, "http://"), "https://")
			for _, args := range tl.cmds(s.URL, host) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				cmd := exec.CommandContext(ctx, args[0], args[1:]...)
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				cancel()
				if err != nil {
					t.Errorf("%s: %v\n%s", strings.Join(args[:min(len(args), 8)], " "), err, out)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			modes := map[string]int{}
			for _, r := range s.recs {
				if r.err != nil {
					t.Errorf("%s %s: %v", r.method, r.target, r.err)
				}
				modes[fmt.Sprintf("%s %v", r.method, r.mode)]++
			}
			t.Logf("%d requests verified: %v", len(s.recs), modes)
		})
	}
}
