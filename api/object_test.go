package api_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
)

func TestObjectOperations(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(c.srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, "")})
	c.ok("repo/create", map[string]any{"repo": "files", "protected": false})
	big := make([]byte, 10<<20)
	rand.Read(big)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("files"), Key: aws.String("big.bin"), Body: bytes.NewReader(big)}); err != nil {
		t.Fatal(err)
	}
	st := c.ok("object/stat", map[string]any{"repo": "files", "key": "big.bin"})["object"].(map[string]any)
	if st["size"].(float64) != float64(len(big)) || len(st["chunks"].([]any)) < 2 {
		t.Fatalf("stat: %v", st)
	}
	// A stat at a commit says it is as of that commit, not of the head.
	first := c.ok("commit/create", map[string]any{"repo": "files", "branch": "main", "message": "one"})["commit"].(map[string]any)["id"].(string)
	c.ok("commit/create", map[string]any{"repo": "files", "branch": "main", "message": "two", "allow_empty": true})
	at := c.ok("object/stat", map[string]any{"repo": "files", "key": "big.bin", "version_id": first})["object"].(map[string]any)
	if at["commit"] != first {
		t.Fatalf("stat at %s says commit %v", first, at["commit"])
	}
	// Edit one byte in the middle: only the chunk around it is rewritten.
	mid := int64(5 << 20)
	res := c.ok("object/compose", map[string]any{"repo": "files", "key": "big.bin", "segments": []map[string]any{
		{"key": "big.bin", "offset": 0, "length": mid},
		{"data": base64.StdEncoding.EncodeToString([]byte{'X'})},
		{"key": "big.bin", "offset": mid + 1, "length": int64(len(big)) - mid - 1},
	}})
	if nb := res["new_bytes"].(float64); nb > 9<<20 || nb == 0 {
		t.Fatalf("a one-byte edit stored %v new bytes", nb)
	}
	want := bytes.Clone(big)
	want[mid] = 'X'
	out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("files"), Key: aws.String("big.bin")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	if !bytes.Equal(got, want) {
		t.Fatal("composed object differs")
	}
	// Rename a key, then a directory of 600 keys (more than one batch).
	c.ok("object/rename", map[string]any{"repo": "files", "from": "big.bin", "to": "moved.bin"})
	c.fails("object/stat", map[string]any{"repo": "files", "key": "big.bin"}, 404, "NotFound")
	for i := 0; i < 600; i++ {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("files"), Key: aws.String(fmt.Sprintf("dir/f%03d", i)), Body: bytes.NewReader([]byte("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	r := c.ok("object/rename", map[string]any{"repo": "files", "from": "dir/", "to": "new/", "prefix": true})
	if r["renamed"].(float64) != 600 || r["atomic"] != false {
		t.Fatalf("rename dir: %v", r)
	}
	list, _ := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("files"), Prefix: aws.String("dir/")})
	if len(list.Contents) != 0 {
		t.Fatalf("%d keys left under dir/", len(list.Contents))
	}
	c.fails("object/rename", map[string]any{"repo": "files", "from": "new/", "to": "new/sub/", "prefix": true}, 400, "InvalidArgument")

	// Under a lease: the same operations are held to its view.
	putRole(c, map[string]any{"repo": "files", "role": "fs"})
	lr := c.ok("lease/create", map[string]any{"repo": "files", "role": "fs", "branch": "main", "paths": []string{"new/**"}, "actions": []string{"list", "read", "write", "delete"},
		"budgets": map[string]any{"bytes_read": 1}})["lease"].(map[string]any)
	lc := &client{t: t, srv: c.srv, creds: aws.Credentials{AccessKeyID: lr["access_key_id"].(string), SecretAccessKey: lr["secret_access_key"].(string), SessionToken: lr["session_token"].(string)}}
	lc.fails("object/stat", map[string]any{"repo": "files", "key": "moved.bin"}, 404, "NotFound")
	lc.ok("object/stat", map[string]any{"repo": "files", "key": "new/f001"})
	lc.fails("object/rename", map[string]any{"repo": "files", "from": "new/f001", "to": "moved2.bin"}, 404, "NotFound")
	lc.ok("object/reads", map[string]any{"repo": "files", "key": "new/f001", "ranges": []map[string]any{{"offset": 0, "length": 1}}})
	lc.fails("object/reads", map[string]any{"repo": "files", "key": "new/f002", "ranges": []map[string]any{{"offset": 0, "length": 1}}}, 403, "QuotaExceeded")
	// Inline bytes are a read, charged like a GET's: with the budget spent
	// the stat answers without them.
	if st := lc.ok("object/stat", map[string]any{"repo": "files", "key": "new/f001", "inline_max": 1024}); st["data"] != nil {
		t.Fatalf("inline bytes beyond the budget: %v", st["data"])
	}

	// The owner (and a lease with budget) gets a small object's bytes with
	// its chunk map; a larger one, or no inline_max, answers without.
	st = c.ok("object/stat", map[string]any{"repo": "files", "key": "new/f001", "inline_max": 1024})
	want, _ = io.ReadAll(getBody(t, cl, "files", "new/f001"))
	if d, _ := base64.StdEncoding.DecodeString(st["data"].(string)); string(d) != string(want) {
		t.Fatalf("inline data %q, want %q", d, want)
	}
	if st := c.ok("object/stat", map[string]any{"repo": "files", "key": "moved.bin", "inline_max": 1024}); st["data"] != nil {
		t.Fatal("inline bytes above inline_max")
	}
	lr2 := c.ok("lease/create", map[string]any{"repo": "files", "role": "fs", "branch": "main", "paths": []string{"new/**"}, "actions": []string{"read"},
		"budgets": map[string]any{"bytes_read": 100}})["lease"].(map[string]any)
	lc2 := &client{t: t, srv: c.srv, creds: aws.Credentials{AccessKeyID: lr2["access_key_id"].(string), SecretAccessKey: lr2["secret_access_key"].(string), SessionToken: lr2["session_token"].(string)}}
	if st := lc2.ok("object/stat", map[string]any{"repo": "files", "key": "new/f001", "inline_max": 1024}); st["data"] == nil {
		t.Fatal("a lease with budget got no inline bytes")
	}
	left := lc2.ok("lease/get", map[string]any{})["remaining"].(map[string]any)["bytes_read"].(float64)
	if left != float64(100-len(want)) {
		t.Fatalf("remaining bytes_read %v after an inline read of %d bytes", left, len(want))
	}
}

func getBody(t *testing.T, cl *s3.Client, bucket, key string) io.Reader {
	t.Helper()
	out, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Body.Close() })
	return out.Body
}
