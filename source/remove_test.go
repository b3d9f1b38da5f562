package source_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/source"
)

// TestStatPartCopyAndRemove: object/stat (the mount's open) and
// UploadPartCopy work on lazy entries; detaching a source keeps what was
// read readable, and evicting forgets it.
func TestStatPartCopyAndRemove(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	big := randomBytes(11, 6<<20)
	rm.put(t, "remote", "r/big.bin", big)
	rm.put(t, "remote", "r/read.txt", []byte("read before removal"))
	rm.put(t, "remote", "r/unread.txt", []byte("never read"))
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/r", rm.URL, nil)["id"].(string)
	ctx := context.Background()

	// object/stat of a lazy object not yet local fetches nothing and
	// answers lazy, with no chunk map (the mount then reads by range);
	// once it is local, the chunk map.
	st := gw.owner(t, "object/stat", map[string]any{"repo": "data", "key": "ds/big.bin"})["object"].(map[string]any)
	if st["lazy"] != true || len(st["chunks"].([]any)) != 0 || rm.gets.Load() != 0 {
		t.Fatalf("stat before a read: %v, %d remote GETs", st, rm.gets.Load())
	}
	mustGet(t, gw.S3, "data", "ds/big.bin", big)
	st = gw.owner(t, "object/stat", map[string]any{"repo": "data", "key": "ds/big.bin"})["object"].(map[string]any)
	var sum float64
	for _, c := range st["chunks"].([]any) {
		sum += c.(map[string]any)["size"].(float64)
	}
	if sum != float64(len(big)) || rm.gets.Load() != 1 {
		t.Fatalf("stat: chunk map of %v bytes, %d remote GETs", sum, rm.gets.Load())
	}

	// A part copied from a lazy object (here already local).
	up, err := gw.S3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("data"), Key: aws.String("assembled")})
	must(t, err)
	var parts []types.CompletedPart
	for i, rng := range []string{"bytes=0-5242879", "bytes=5242880-6291455"} {
		out, err := gw.S3.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("data"), Key: aws.String("assembled"),
			UploadId: up.UploadId, PartNumber: aws.Int32(int32(i + 1)), CopySource: aws.String("data/ds/big.bin"), CopySourceRange: aws.String(rng)})
		must(t, err)
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag})
	}
	_, err = gw.S3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("data"), Key: aws.String("assembled"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	must(t, err)
	mustGet(t, gw.S3, "data", "assembled", big)
	// A part copy of an object never read fetches it (one GET).
	up2, err := gw.S3.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("data"), Key: aws.String("one")})
	must(t, err)
	_, err = gw.S3.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("data"), Key: aws.String("one"),
		UploadId: up2.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String("data/ds/read.txt")})
	must(t, err)
	if rm.gets.Load() != 2 {
		t.Fatalf("%d remote GETs after the part copies, want 2", rm.gets.Load())
	}

	// Detach: what was read stays readable; the rest answers clearly.
	gw.owner(t, "source/remove", map[string]any{"id": id})
	mustGet(t, gw.S3, "data", "ds/read.txt", []byte("read before removal"))
	mustGet(t, gw.S3, "data", "ds/big.bin", big)
	_, err = get(t, gw.S3, "data", "ds/unread.txt", "")
	wantCode(t, err, http.StatusConflict, "RemoteSourceRemoved")
	if st, out := ctl(t, gw.URL, ownerCreds, "source/get", map[string]any{"id": id}); st != http.StatusNotFound {
		t.Fatalf("source/get after remove: %d %v", st, out)
	}
	// Evicting what was fetched from a removed source (remove again is a
	// 404, so evict through the materializer directly).
	must(t, gw.G.Sources.Materializer().Evict(ctx, id))
	_, err = get(t, gw.S3, "data", "ds/read.txt", "")
	wantCode(t, err, http.StatusConflict, "RemoteSourceRemoved")
	mustGet(t, gw.S3, "data", "assembled", big) // a copy of the bytes is its own
	if _, err := gw.G.Branches.Collect(ctx, branchGCNow()); err != nil {
		t.Fatal(err)
	}
	mustGet(t, gw.S3, "data", "assembled", big)
	rep, err := gw.G.Branches.Check(ctx)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
}

// TestRestart: attachments, credentials and the side index survive a
// restart; what was read reads with the remote down, the rest is fetched
// through the source reopened from its record.
func TestRestart(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.put(t, "remote", "r/a", []byte("alpha"))
	rm.put(t, "remote", "r/b", []byte("beta"))
	dir := t.TempDir()
	gw := startGatewayAt(t, dir, source.Options{})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "ds/", "s3://remote/r", rm.URL, nil)
	mustGet(t, gw.S3, "data", "ds/a", []byte("alpha"))
	gw.close()

	gw = startGatewayAt(t, dir, source.Options{})
	rm.down.Store(true)
	mustGet(t, gw.S3, "data", "ds/a", []byte("alpha"))
	rm.down.Store(false)
	mustGet(t, gw.S3, "data", "ds/b", []byte("beta"))
	if rm.gets.Load() != 2 {
		t.Fatalf("%d remote GETs, want 2", rm.gets.Load())
	}
}
