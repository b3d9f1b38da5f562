package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/nastest"
)

// TestS3Conformance holds the small answers S3 gives that clients and
// ceph/s3-tests check: each subtest is one rule.
func TestS3Conformance(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	b := "conform"
	createBucket(t, c, b)

	t.Run("RepeatedCompleteAnswersTheSame", func(t *testing.T) {
		m := createMPU(t, c, b, "mp")
		m.part(1, bytes.Repeat([]byte("a"), 5*mib))
		m.part(2, []byte("tail"))
		first := m.complete()
		again, err := m.tryComplete(m.parts)
		if err != nil {
			t.Fatalf("repeated complete: %v", err)
		}
		if aws.ToString(again.ETag) != aws.ToString(first.ETag) || aws.ToString(again.VersionId) != aws.ToString(first.VersionId) {
			t.Errorf("repeated complete = %s %s, first %s %s", aws.ToString(again.ETag), aws.ToString(again.VersionId),
				aws.ToString(first.ETag), aws.ToString(first.VersionId))
		}
		// Other parts under the gone upload ID are still no such upload.
		_, err = m.tryComplete(m.parts[:1])
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
	})

	t.Run("RangeOnEmptyObject", func(t *testing.T) {
		put(t, c, b, "empty", nil)
		_, _, err := tryGet(c, b, "empty", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=40-50") })
		wantErr(t, err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
		got, _ := get(t, c, b, "empty")
		wantBytes(t, got, nil)
	})

	t.Run("PartCopyRangePastEnd", func(t *testing.T) {
		put(t, c, b, "five", []byte("12345"))
		m := createMPU(t, c, b, "copied")
		_, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String("copied"),
			UploadId: aws.String(m.id), PartNumber: aws.Int32(1), CopySource: aws.String(b + "/five"),
			CopySourceRange: aws.String("bytes=0-21")})
		wantErr(t, err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
		_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String("copied"),
			UploadId: aws.String(m.id), PartNumber: aws.Int32(1), CopySource: aws.String(b + "/five"),
			CopySourceRange: aws.String("bytes=1-4")})
		must(t, err)
	})

	t.Run("PartNumberBeyondParts", func(t *testing.T) {
		put(t, c, b, "whole", []byte("whole"))
		_, _, err := tryGet(c, b, "whole", func(in *s3.GetObjectInput) { in.PartNumber = aws.Int32(2) })
		wantErr(t, err, http.StatusBadRequest, "InvalidPart")
	})

	t.Run("NotModifiedNamesTheVersion", func(t *testing.T) {
		out := put(t, c, b, "cond", []byte("bar"))
		_, _, err := tryGet(c, b, "cond", func(in *s3.GetObjectInput) { in.IfNoneMatch = out.ETag })
		if errStatus(err) != http.StatusNotModified {
			t.Fatalf("If-None-Match of the current ETag: %v", err)
		}
		req := rawRequest(t, http.MethodGet, srv.Endpoint+"/"+b+"/cond", nil, time.Now(), owner, http.Header{"If-None-Match": {aws.ToString(out.ETag)}})
		status, h, _ := do(t, req)
		if status != http.StatusNotModified || h.Get("ETag") != aws.ToString(out.ETag) || h.Get("Last-Modified") == "" {
			t.Errorf("304: status %d ETag %q Last-Modified %q", status, h.Get("ETag"), h.Get("Last-Modified"))
		}
	})

	t.Run("ListBucketsPages", func(t *testing.T) {
		for i := range 3 {
			createBucket(t, c, fmt.Sprintf("page-%d", i))
		}
		var names []string
		var token *string
		for {
			out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(1), ContinuationToken: token, Prefix: aws.String("page-")})
			must(t, err)
			if len(out.Buckets) > 1 {
				t.Fatalf("page of %d buckets, max 1", len(out.Buckets))
			}
			for _, bk := range out.Buckets {
				names = append(names, aws.ToString(bk.Name))
			}
			if out.ContinuationToken == nil {
				break
			}
			token = out.ContinuationToken
		}
		if !slices.Equal(names, []string{"page-0", "page-1", "page-2"}) {
			t.Errorf("paged ListBuckets = %q", names)
		}
		_, err := c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(0)})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	})

	t.Run("ListV1PrefixAsGiven", func(t *testing.T) {
		out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String("a b\n"), EncodingType: types.EncodingTypeUrl})
		must(t, err)
		if aws.ToString(out.Prefix) != "a b\n" {
			t.Errorf("v1 Prefix = %q", aws.ToString(out.Prefix))
		}
		v2, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), ContinuationToken: aws.String("")})
		must(t, err)
		if v2.ContinuationToken == nil || *v2.ContinuationToken != "" {
			t.Errorf("empty ContinuationToken not echoed: %v", v2.ContinuationToken)
		}
	})

	t.Run("DeletedKeyNamesItsMarker", func(t *testing.T) {
		put(t, c, b, "gone", []byte("x"))
		del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("gone")})
		must(t, err)
		for _, method := range []string{http.MethodHead, http.MethodGet} {
			status, h, _ := do(t, rawRequest(t, method, srv.Endpoint+"/"+b+"/gone", nil, time.Now(), owner, nil))
			if status != http.StatusNotFound || h.Get("x-amz-delete-marker") != "true" || h.Get("x-amz-version-id") != aws.ToString(del.VersionId) {
				t.Errorf("%s of a deleted key: %d marker %q version %q (delete said %q)", method, status,
					h.Get("x-amz-delete-marker"), h.Get("x-amz-version-id"), aws.ToString(del.VersionId))
			}
		}
		status, h, _ := do(t, rawRequest(t, http.MethodHead, srv.Endpoint+"/"+b+"/never", nil, time.Now(), owner, nil))
		if status != http.StatusNotFound || h.Get("x-amz-delete-marker") != "" {
			t.Errorf("HEAD of a key never written: %d marker %q", status, h.Get("x-amz-delete-marker"))
		}
	})

	t.Run("PutBucketVersioning", func(t *testing.T) {
		for _, tc := range []struct {
			body   string
			status int
			code   string
		}{
			{"", http.StatusBadRequest, "MalformedXML"},
			{`<VersioningConfiguration><Status>Sometimes</Status></VersioningConfiguration>`, http.StatusBadRequest, "MalformedXML"},
			{`<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>`, http.StatusBadRequest, "InvalidArgument"},
			{`<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`, http.StatusOK, ""},
		} {
			status, _, body := do(t, rawRequest(t, http.MethodPut, srv.Endpoint+"/"+b+"?versioning", []byte(tc.body), time.Now(), owner, nil))
			if status != tc.status || (tc.code != "" && xmlCode(body) != tc.code) {
				t.Errorf("PutBucketVersioning %q: %d %s, want %d %s", tc.body, status, xmlCode(body), tc.status, tc.code)
			}
		}
	})

	t.Run("NonASCIIMetadataBytesUnchanged", func(t *testing.T) {
		for _, v := range []string{"Hello World\u00e9", "\u65e5\u672c", "latin1 \xe9 byte"} {
			hdr := http.Header{"X-Amz-Meta-Note": {v}}
			status, _, body := do(t, rawRequest(t, http.MethodPut, srv.Endpoint+"/"+b+"/meta", []byte("m"), time.Now(), owner, hdr))
			if status != http.StatusOK {
				t.Fatalf("PUT with metadata %q: %d %s", v, status, body)
			}
			status, h, _ := do(t, rawRequest(t, http.MethodHead, srv.Endpoint+"/"+b+"/meta", nil, time.Now(), owner, nil))
			if status != http.StatusOK || h.Get("X-Amz-Meta-Note") != v {
				t.Errorf("metadata %q came back as %q (%d)", v, h.Get("X-Amz-Meta-Note"), status)
			}
		}
	})

	t.Run("PartGetCarriesPartChecksum", func(t *testing.T) {
		m := createMPU(t, c, b, "sums", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32 })
		p1 := bytes.Repeat([]byte("1"), 5*mib)
		out1 := m.part(1, p1)
		m.part(2, []byte("two"))
		m.complete()
		got, o := get(t, c, b, "sums", func(in *s3.GetObjectInput) {
			in.PartNumber = aws.Int32(1)
			in.ChecksumMode = types.ChecksumModeEnabled
		})
		wantBytes(t, got, p1)
		if aws.ToString(o.ChecksumCRC32) != aws.ToString(out1.ChecksumCRC32) || o.ChecksumType == "" {
			t.Errorf("part 1 GET checksum %q type %q, part's %q", aws.ToString(o.ChecksumCRC32), o.ChecksumType, aws.ToString(out1.ChecksumCRC32))
		}
	})
}
