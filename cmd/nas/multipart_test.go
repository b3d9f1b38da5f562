package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
)

// TestCpAbortsFailedUpload: a multipart upload that fails half way (the
// lease's write budget admits the first 16 MiB part, not the second) is
// aborted, so no upload is left open, and the error is the gateway's.
func TestCpAbortsFailedUpload(t *testing.T) {
	srv, _ := ownerCLI(t)
	mustCLI(t, "repo", "create", "budget", "--unprotected")
	mustCLI(t, "commit", "budget", "main", "-m", "base", "--allow-empty")
	mustCLI(t, "role", "put", "writer", "--repo", "budget", "--paths", "**", "--actions", "list,read,write")
	lj := mustCLI(t, "lease", "create", "budget", "--role", "writer", "--paths", "**", "--actions", "list,read,write",
		"--budget-bytes-written", "20000000", "--json")
	lf := filepath.Join(t.TempDir(), "lease.json")
	must(t, os.WriteFile(lf, []byte(lj), 0o600))
	var lease struct {
		Branch string `json:"branch"`
	}
	must(t, json.Unmarshal([]byte(lj), &lease))
	src := filepath.Join(t.TempDir(), "big.bin")
	writeRandom(t, src, 48<<20, 5)
	code, stderr := runCLIStderr(t, "--lease-json", lf, "cp", src, "budget/big.bin", "--parallel", "1", "--json")
	if doc := errorDoc(t, stderr); code != 1 || doc.Code != "QuotaExceeded" {
		t.Fatalf("an upload over budget: exit %d, %+v", code, doc)
	}
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, "")})
	bucket := "budget_" + strings.ReplaceAll(lease.Branch, "/", "_")
	out, err := cl.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil || len(out.Uploads) != 0 {
		t.Fatalf("uploads left open on %s: %v %v", bucket, out, err)
	}
	if code, out := runCLI(t, "ls", "budget@"+lease.Branch+":/"); code != 0 || out != "" {
		t.Fatalf("objects on the run's branch: %d %q", code, out)
	}
}
