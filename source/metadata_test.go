package source_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/source"
)

// TestAttachWithMetadata: with with_metadata an attach asks each object
// for its content type and user metadata (a HEAD, no GET) and the gateway
// serves them like a local object's; without it they are unknown.
func TestAttachWithMetadata(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	ctx := context.Background()
	_, err := rm.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("remote"), Key: aws.String("docs/a.json"),
		Body: strings.NewReader(`{"a":1}`), ContentType: aws.String("application/json"),
		Metadata: map[string]string{"Owner": "alice", "batch": "7"}})
	must(t, err)
	rm.put(t, "remote", "docs/b.bin", []byte("plain"))
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.mkRepo(t, "bare")
	g0 := rm.gets.Load()
	info := gw.attach(t, "data", "ds/", "s3://remote/docs", rm.URL, map[string]any{"with_metadata": true})
	if info["with_metadata"] != true || info["added"].(float64) != 2 {
		t.Fatalf("attach: %v", info)
	}
	gw.attach(t, "bare", "ds/", "s3://remote/docs", rm.URL, nil)
	if d := rm.gets.Load() - g0; d != 0 {
		t.Fatalf("attaching with metadata made %d object GETs, want 0", d)
	}
	h, err := gw.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("ds/a.json")})
	must(t, err)
	if aws.ToString(h.ContentType) != "application/json" || h.Metadata["owner"] != "alice" || h.Metadata["batch"] != "7" {
		t.Fatalf("HEAD with metadata: %q %v", aws.ToString(h.ContentType), h.Metadata)
	}
	mustGet(t, gw.S3, "data", "ds/a.json", []byte(`{"a":1}`))
	h, err = gw.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bare"), Key: aws.String("ds/a.json")})
	must(t, err)
	// Only the gateway's trust labels: an attached object is external.
	if aws.ToString(h.ContentType) != "binary/octet-stream" || len(h.Metadata) != 3 || h.Metadata["nas-origin"] != "external" {
		t.Fatalf("HEAD without metadata: %q %v", aws.ToString(h.ContentType), h.Metadata)
	}
	// A refresh of a changed object pins its new metadata too.
	_, err = rm.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("remote"), Key: aws.String("docs/b.bin"),
		Body: strings.NewReader("changed"), ContentType: aws.String("text/plain")})
	must(t, err)
	gw.owner(t, "source/refresh", map[string]any{"id": info["id"], "wait": true})
	h, err = gw.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("ds/b.bin")})
	must(t, err)
	if aws.ToString(h.ContentType) != "text/plain" {
		t.Fatalf("HEAD after refresh: %q", aws.ToString(h.ContentType))
	}
}
