package api_test

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/apiv1"
)

// batchResults calls object/put-batch and returns its results.
func batchResults(t *testing.T, c *client, args map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range c.ok("object/put-batch", args)["results"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// itemCode is a batch result's error code ("" when it was stored).
func itemCode(r map[string]any) string {
	e, _ := r["error"].(map[string]any)
	if e == nil {
		return ""
	}
	return e["code"].(string)
}

func crc32cOf(b []byte) string {
	s := crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli))
	return base64.StdEncoding.EncodeToString([]byte{byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)})
}

// TestPutBatch: each object of a batch is stored as its own PUT would
// store it (bytes, MD5 ETag, checksum, metadata, content type, the
// scanner's label), an object refused on its own (bad metadata, a wrong
// checksum, a failed precondition) does not stop the others, and a batch
// past its bounds or on a protected branch is refused whole.
func TestPutBatch(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	c.ok("repo/create", map[string]any{"repo": "pbt", "protected": false})
	cl := s3Of(c, c.creds)
	plain := []byte("hello, batch\n")
	leak := []byte("export AWS_ACCESS_KEY_ID=AKIA" + "IOSFODNN7" + "EXAMPLE\n")
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pbt"), Key: aws.String("taken"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	rs := batchResults(t, c, map[string]any{"repo": "pbt", "objects": []map[string]any{
		{"key": "a.txt", "data": plain, "content_type": "text/plain", "meta": map[string]string{"mode": "33188"}, "checksum_crc32c": crc32cOf(plain)},
		{"key": "bad-meta", "data": plain, "meta": map[string]string{"bad name": "x"}},
		{"key": "labels", "data": plain, "meta": map[string]string{"nas-sensitivity": "public"}},
		{"key": "bad-sum", "data": plain, "checksum_crc32c": crc32cOf(leak)},
		{"key": "taken", "data": plain, "if_none_match": "*"},
		{"key": "leak.env", "data": leak},
		{"key": "empty", "data": []byte{}},
	}})
	wantCodes := []string{"", "InvalidArgument", "InvalidArgument", "BadDigest", "Conflict", "", ""}
	for i, r := range rs {
		if got := itemCode(r); got != wantCodes[i] {
			t.Errorf("object %d (%v): error %q, want %q", i, r["key"], got, wantCodes[i])
		}
	}
	sum := md5.Sum(plain)
	h, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("pbt"), Key: aws.String("a.txt"), ChecksumMode: s3types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(h.ETag) != `"`+hex.EncodeToString(sum[:])+`"` || aws.ToString(h.ChecksumCRC32C) != crc32cOf(plain) ||
		aws.ToString(h.ContentType) != "text/plain" || h.Metadata["mode"] != "33188" || aws.ToString(h.VersionId) != rs[0]["version_id"] {
		t.Fatalf("HEAD a.txt: etag %s crc32c %s type %s meta %v version %s; batch said %v",
			aws.ToString(h.ETag), aws.ToString(h.ChecksumCRC32C), aws.ToString(h.ContentType), h.Metadata, aws.ToString(h.VersionId), rs[0])
	}
	if got, _ := io.ReadAll(getBody(t, cl, "pbt", "a.txt")); string(got) != string(plain) {
		t.Fatalf("a.txt reads %q", got)
	}
	// Its chunk map is object/stat's.
	st := c.ok("object/stat", map[string]any{"repo": "pbt", "key": "a.txt"})["object"].(map[string]any)
	if fmt.Sprint(st["chunks"]) != fmt.Sprint(rs[0]["chunks"]) || len(st["chunks"].([]any)) == 0 {
		t.Fatalf("chunks: put-batch said %v, stat says %v", rs[0]["chunks"], st["chunks"])
	}
	if got, _ := io.ReadAll(getBody(t, cl, "pbt", "taken")); string(got) != "x" {
		t.Fatalf("If-None-Match overwrote taken: %q", got)
	}
	// The scanner labels a batch's object as it labels a PUT's.
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("pbt"), Key: aws.String("leak-put.env"), Body: strings.NewReader(string(leak))}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"leak.env", "leak-put.env"} {
		h, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("pbt"), Key: aws.String(k)})
		if err != nil || h.Metadata["nas-sensitivity"] != "secret" {
			t.Fatalf("%s: %v, labels %v; want secret", k, err, h.Metadata)
		}
	}

	// Bounds: too many objects, too much data; a protected branch.
	many := make([]map[string]any, 257)
	for i := range many {
		many[i] = map[string]any{"key": "k", "data": []byte{}}
	}
	c.fails("object/put-batch", map[string]any{"repo": "pbt", "objects": many}, 400, "InvalidArgument")
	c.fails("object/put-batch", map[string]any{"repo": "pbt", "objects": []map[string]any{}}, 400, "InvalidArgument")
	big := make([]byte, 1100<<10)
	c.fails("object/put-batch", map[string]any{"repo": "pbt", "objects": []map[string]any{{"key": "b1", "data": big}, {"key": "b2", "data": big}}}, 400, "InvalidArgument")
	c.ok("branch/protect", map[string]any{"repo": "pbt", "name": "main"})
	c.fails("object/put-batch", map[string]any{"repo": "pbt", "objects": []map[string]any{{"key": "p", "data": plain}}}, 403, "AccessDenied")
}

// TestPutBatchLease: under a lease each object is authorized and charged
// on its own: outside the view is NotFound (and recorded as a denial),
// past the write budget QuotaExceeded, and only what was stored is
// charged.
func TestPutBatchLease(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "pbl", "protected": false})
	lc, l := leaseClient(t, c, map[string]any{"repo": "pbl", "role": "pbl", "branch": "main", "paths": []string{"out/**"},
		"actions": []string{"list", "read", "write"}, "budgets": map[string]any{"bytes_written": 10}})
	rs := batchResults(t, lc, map[string]any{"repo": "pbl", "objects": []map[string]any{
		{"key": "out/a", "data": []byte("12345")},
		{"key": "elsewhere/b", "data": []byte("1")},
		{"key": "out/c", "data": []byte("too many bytes for the budget")},
		{"key": "out/d", "data": []byte("1234")},
	}})
	wantCodes := []string{"", "NotFound", "QuotaExceeded", ""}
	for i, r := range rs {
		if got := itemCode(r); got != wantCodes[i] {
			t.Errorf("object %d (%v): error %q, want %q", i, r["key"], got, wantCodes[i])
		}
	}
	left := lc.ok("lease/get", map[string]any{})["remaining"].(map[string]any)["bytes_written"].(float64)
	if said := lc.ok("object/put-batch", map[string]any{"repo": "pbl", "objects": []map[string]any{{"key": "out/e", "data": []byte{}}}})["remaining"].(map[string]any)["bytes_written"].(float64); said != left {
		t.Fatalf("put-batch says %v bytes_written left, lease/get %v", said, left)
	}
	if left != 1 {
		t.Fatalf("bytes_written left %v, want 1 (10 - 5 - 4)", left)
	}
	denied := c.ok("record/list", map[string]any{"run": l["run"], "kinds": []string{"denied"}})["records"].([]any)
	if len(denied) == 0 {
		t.Fatal("no denial recorded for the write outside the view")
	}
	st := c.ok("object/stat", map[string]any{"repo": "pbl", "key": "out/d", "inline_max": 64})
	if d, _ := base64.StdEncoding.DecodeString(st["data"].(string)); string(d) != "1234" {
		t.Fatalf("out/d holds %q", d)
	}
	c.fails("object/stat", map[string]any{"repo": "pbl", "key": "out/c"}, 404, "NotFound")
}

// TestPutBatchReplays: a put-batch sent again with the same idempotency
// key in the header (as package client sends it on a retry) answers the
// first call's results and stores nothing twice; another key stores anew.
func TestPutBatchReplays(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "pbr", "protected": false})
	args := map[string]any{"repo": "pbr", "objects": []map[string]any{{"key": "a", "data": []byte("x")}}}
	vid := func(key string) string {
		t.Helper()
		st, out := c.callHeader("object/put-batch", args, http.Header{apiv1.IdempotencyHeader: {key}})
		if st != 200 {
			t.Fatalf("put-batch: %d %v", st, out)
		}
		return out["results"].([]any)[0].(map[string]any)["version_id"].(string)
	}
	first := vid("k-1")
	if again := vid("k-1"); again != first {
		t.Fatalf("the retry stored version %s, the first call %s", again, first)
	}
	if other := vid("k-2"); other == first {
		t.Fatal("a new key did not store a new version")
	}
	vs, err := s3Of(c, c.creds).ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String("pbr")})
	if err != nil || len(vs.Versions) != 2 {
		t.Fatalf("versions: %v, %v; want 2", err, vs)
	}
}
