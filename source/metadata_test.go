package source_test

import (
	"context"
	"strings"
	"testing"
	"time"

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
		Metadata: map[string]string{"Owner": "alice", "batch": "7", "nas-sensitivity": "public", "nas-retention": "scratch"}})
	must(t, err)
	rm.put(t, "remote", "docs/b.bin", []byte("plain"))
	const retry = time.Second
	gw := startGateway(t, source.Options{Materializer: source.MaterializerOptions{MetaRetry: retry}})
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
	if aws.ToString(h.ContentType) != "application/json" || h.Metadata["owner"] != "alice" || h.Metadata["batch"] != "7" ||
		h.Metadata["nas-retention"] != "" || h.Metadata["nas-sensitivity"] == "public" {
		t.Fatalf("HEAD with metadata: %q %v", aws.ToString(h.ContentType), h.Metadata)
	}
	mustGet(t, gw.S3, "data", "ds/a.json", []byte(`{"a":1}`))
	// Without it, the first HEAD asks the remote once (a HEAD, no GET);
	// later ones, on any branch, answer from the side index. While the
	// remote is down the listing's defaults are served, nothing is kept,
	// and the remote is left alone for a while.
	rm.down.Store(true)
	for i := range 2 {
		r0 := rm.reqs.Load()
		h, err = gw.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bare"), Key: aws.String("ds/a.json")})
		must(t, err)
		if aws.ToString(h.ContentType) != "binary/octet-stream" || len(h.Metadata) != 3 || h.Metadata["nas-origin"] != "external" {
			t.Fatalf("HEAD %d without metadata, the remote down: %q %v", i, aws.ToString(h.ContentType), h.Metadata)
		}
		if d := rm.reqs.Load() - r0; (i == 0) != (d > 0) {
			t.Fatalf("HEAD %d with the remote down made %d remote requests", i, d)
		}
	}
	rm.down.Store(false)
	time.Sleep(retry)
	g0 = rm.gets.Load()
	for i := range 2 {
		r0 := rm.reqs.Load()
		h, err = gw.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bare"), Key: aws.String("ds/a.json")})
		must(t, err)
		if aws.ToString(h.ContentType) != "application/json" || h.Metadata["owner"] != "alice" || h.Metadata["nas-origin"] != "external" ||
			h.Metadata["nas-retention"] != "" {
			t.Fatalf("HEAD %d without metadata: %q %v", i, aws.ToString(h.ContentType), h.Metadata)
		}
		if d := rm.reqs.Load() - r0; (i == 0) != (d > 0) {
			t.Fatalf("HEAD %d made %d remote requests", i, d)
		}
	}
	if rm.gets.Load() != g0 {
		t.Fatal("asking for metadata fetched the object")
	}
	// A copy keeps what a GET of the source answers.
	_, err = gw.S3.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bare"), Key: aws.String("copy.json"), CopySource: aws.String("bare/ds/a.json")})
	must(t, err)
	h, err = gw.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bare"), Key: aws.String("copy.json")})
	must(t, err)
	if aws.ToString(h.ContentType) != "application/json" || h.Metadata["owner"] != "alice" {
		t.Fatalf("HEAD of a copy: %q %v", aws.ToString(h.ContentType), h.Metadata)
	}
	gw.owner(t, "branch/create", map[string]any{"repo": "bare", "name": "fork", "from": "main"})
	r0 := rm.reqs.Load()
	o, err := gw.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bare_fork"), Key: aws.String("ds/a.json")})
	must(t, err)
	o.Body.Close()
	if aws.ToString(o.ContentType) != "application/json" || rm.reqs.Load()-r0 != 1 {
		t.Fatalf("GET: %q after %d remote requests (want the one fetch)", aws.ToString(o.ContentType), rm.reqs.Load()-r0)
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
