package e2e_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/nastest"
)

var allAttributes = []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesChecksum,
	types.ObjectAttributesObjectParts, types.ObjectAttributesStorageClass, types.ObjectAttributesObjectSize}

// uploadParts completes a multipart upload of bucket/key from parts with
// CRC32 checksums and returns the object's ETag.
func uploadParts(t *testing.T, c *s3.Client, bucket, key string, parts [][]byte) string {
	t.Helper()
	ctx := context.Background()
	bk, k := aws.String(bucket), aws.String(key)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bk, Key: k, ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
	must(t, err)
	var done []types.CompletedPart
	for i, p := range parts {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: k, UploadId: up.UploadId, PartNumber: aws.Int32(int32(i + 1)),
			Body: bytes.NewReader(p), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32})
		must(t, err)
		done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1)), ChecksumCRC32: out.ChecksumCRC32})
	}
	out, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bk, Key: k, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	must(t, err)
	return strings.Trim(aws.ToString(out.ETag), `"`)
}

func quote(s string) string { return `"` + s + `"` }

func TestGetObjectAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "attrs"
	createBucket(t, c, b)
	bk := aws.String(b)
	parts := [][]byte{randBytes("p1", 5<<20), randBytes("p2", 5<<20), randBytes("p3", 1234)}
	etag := uploadParts(t, c, b, "mp", parts)

	t.Run("MultipartPaged", func(t *testing.T) {
		out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("mp"),
			ObjectAttributes: allAttributes, MaxParts: aws.Int32(2)})
		must(t, err)
		if aws.ToString(out.ETag) != etag || aws.ToInt64(out.ObjectSize) != 10<<20+1234 || out.StorageClass != types.StorageClassStandard {
			t.Fatalf("attributes: etag %q size %d class %q", aws.ToString(out.ETag), aws.ToInt64(out.ObjectSize), out.StorageClass)
		}
		if out.Checksum == nil || aws.ToString(out.Checksum.ChecksumCRC32) == "" || out.LastModified == nil || aws.ToString(out.VersionId) == "" {
			t.Fatalf("checksum %+v, last modified %v, version %q", out.Checksum, out.LastModified, aws.ToString(out.VersionId))
		}
		op := out.ObjectParts
		if op == nil || aws.ToInt32(op.TotalPartsCount) != 3 || !aws.ToBool(op.IsTruncated) || len(op.Parts) != 2 ||
			aws.ToString(op.NextPartNumberMarker) != "2" || aws.ToInt32(op.MaxParts) != 2 {
			t.Fatalf("first page: %+v", op)
		}
		if aws.ToInt64(op.Parts[1].Size) != 5<<20 || aws.ToInt32(op.Parts[1].PartNumber) != 2 || aws.ToString(op.Parts[0].ChecksumCRC32) == "" {
			t.Fatalf("parts: %+v", op.Parts)
		}
		out, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("mp"),
			ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectParts}, MaxParts: aws.Int32(2), PartNumberMarker: op.NextPartNumberMarker})
		must(t, err)
		op = out.ObjectParts
		if aws.ToBool(op.IsTruncated) || len(op.Parts) != 1 || aws.ToInt32(op.Parts[0].PartNumber) != 3 || aws.ToInt64(op.Parts[0].Size) != 1234 {
			t.Fatalf("second page: %+v", op)
		}
		if out.ETag != nil || out.ObjectSize != nil || out.Checksum != nil {
			t.Fatalf("attributes not asked for were answered: %+v", out)
		}
	})

	t.Run("Minio", func(t *testing.T) {
		mc := newMinio(t, srv)
		oa, err := mc.GetObjectAttributes(ctx, b, "mp", minio.ObjectAttributesOptions{MaxParts: 1, PartNumberMarker: 1})
		must(t, err)
		p := oa.ObjectParts
		if oa.ETag != etag || oa.ObjectSize != 10<<20+1234 || p.PartsCount != 3 || len(p.Parts) != 1 || p.Parts[0].PartNumber != 2 ||
			!p.IsTruncated || p.NextPartNumberMarker != 2 || oa.VersionID == "" {
			t.Fatalf("minio attributes: %+v", oa)
		}
	})

	t.Run("OlderVersion", func(t *testing.T) {
		v1 := put(t, c, b, "v", []byte("first"))
		put(t, c, b, "v", []byte("second, longer"))
		ownerCtl(t, srv).commit(b, "main", "two versions")
		out, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("v"), VersionId: v1.VersionId,
			ObjectAttributes: allAttributes})
		must(t, err)
		if quote(aws.ToString(out.ETag)) != etagOf([]byte("first")) || aws.ToInt64(out.ObjectSize) != 5 || aws.ToString(out.VersionId) != aws.ToString(v1.VersionId) {
			t.Fatalf("older version: %+v", out)
		}
		if out.ObjectParts != nil {
			t.Fatalf("a single PUT has no parts: %+v", out.ObjectParts)
		}
		del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: aws.String("v")})
		must(t, err)
		_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("v"), VersionId: del.VersionId,
			ObjectAttributes: allAttributes})
		wantErr(t, err, http.StatusMethodNotAllowed, "MethodNotAllowed")
		_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("v"), ObjectAttributes: allAttributes})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})

	t.Run("BadRequests", func(t *testing.T) {
		_, err := c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("mp"),
			ObjectAttributes: []types.ObjectAttributes{"Colour"}})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		// The SDK refuses to send no attributes; a raw request can.
		req := rawRequest(t, http.MethodGet, srv.Endpoint+"/"+b+"/mp?attributes=", nil, time.Now(), owner, nil)
		if st, h, body := do(t, req); st != http.StatusBadRequest || xmlCode(body) != "InvalidRequest" || h.Get("ETag") != "" {
			t.Fatalf("no attributes: %d %s", st, body)
		}
	})
}
