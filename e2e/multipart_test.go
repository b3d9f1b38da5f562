package e2e_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/nastest"
)

const mib = 1 << 20

// mpu drives one multipart upload through the low-level API.
type mpu struct {
	t      testing.TB
	c      *s3.Client
	bucket string
	key    string
	id     string
	alg    types.ChecksumAlgorithm
	parts  []types.CompletedPart
}

func createMPU(t testing.TB, c *s3.Client, bucket, key string, tune ...func(*s3.CreateMultipartUploadInput)) *mpu {
	t.Helper()
	in := &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	for _, f := range tune {
		f(in)
	}
	out, err := c.CreateMultipartUpload(context.Background(), in)
	if err != nil {
		t.Fatalf("create multipart upload %s/%s: %v", bucket, key, err)
	}
	if aws.ToString(out.UploadId) == "" || aws.ToString(out.Key) != key || aws.ToString(out.Bucket) != bucket {
		t.Fatalf("CreateMultipartUpload answered %+v", out)
	}
	return &mpu{t: t, c: c, bucket: bucket, key: key, id: aws.ToString(out.UploadId), alg: in.ChecksumAlgorithm}
}

func (m *mpu) tryPart(n int32, data []byte) (*s3.UploadPartOutput, error) {
	return m.c.UploadPart(context.Background(), &s3.UploadPartInput{Bucket: aws.String(m.bucket), Key: aws.String(m.key),
		UploadId: aws.String(m.id), PartNumber: aws.Int32(n), Body: bytes.NewReader(data), ChecksumAlgorithm: m.alg})
}

// part uploads part n and remembers it for complete.
func (m *mpu) part(n int32, data []byte) *s3.UploadPartOutput {
	m.t.Helper()
	out, err := m.tryPart(n, data)
	if err != nil {
		m.t.Fatalf("upload part %d: %v", n, err)
	}
	if aws.ToString(out.ETag) != etagOf(data) {
		m.t.Errorf("part %d ETag = %s, want %s", n, aws.ToString(out.ETag), etagOf(data))
	}
	m.parts = append(m.parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag,
		ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME,
		ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256})
	return out
}

func (m *mpu) tryComplete(parts []types.CompletedPart, tune ...func(*s3.CompleteMultipartUploadInput)) (*s3.CompleteMultipartUploadOutput, error) {
	in := &s3.CompleteMultipartUploadInput{Bucket: aws.String(m.bucket), Key: aws.String(m.key), UploadId: aws.String(m.id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}
	for _, f := range tune {
		f(in)
	}
	return m.c.CompleteMultipartUpload(context.Background(), in)
}

func (m *mpu) complete() *s3.CompleteMultipartUploadOutput {
	m.t.Helper()
	out, err := m.tryComplete(m.parts)
	if err != nil {
		m.t.Fatalf("complete %s: %v", m.key, err)
	}
	return out
}

func TestMultipart(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "multi"
	createBucket(t, c, b)
	p1, p2, p3 := randBytes("p1", 5*mib), randBytes("p2", 5*mib+17), randBytes("p3", 1000)
	whole := slices.Concat(p1, p2, p3)

	t.Run("LowLevel", func(t *testing.T) {
		m := createMPU(t, c, b, "big.bin", func(in *s3.CreateMultipartUploadInput) {
			in.ContentType = aws.String("application/x-test")
			in.Metadata = map[string]string{"purpose": "mpu"}
		})
		// Parts may arrive in any order and be re-uploaded.
		m.part(2, p2)
		m.part(1, randBytes("replaced", 5*mib))
		m.parts = m.parts[:1]
		m.part(1, p1)
		m.part(3, p3)
		slices.SortFunc(m.parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })

		t.Run("ListParts", func(t *testing.T) {
			out, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("big.bin"), UploadId: aws.String(m.id)})
			must(t, err)
			if len(out.Parts) != 3 {
				t.Fatalf("ListParts: %d parts", len(out.Parts))
			}
			for i, want := range [][]byte{p1, p2, p3} {
				p := out.Parts[i]
				if aws.ToInt32(p.PartNumber) != int32(i+1) || aws.ToInt64(p.Size) != int64(len(want)) || aws.ToString(p.ETag) != etagOf(want) {
					t.Errorf("part %d: number %d size %d etag %s", i+1, aws.ToInt32(p.PartNumber), aws.ToInt64(p.Size), aws.ToString(p.ETag))
				}
			}
			page, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("big.bin"), UploadId: aws.String(m.id), MaxParts: aws.Int32(2)})
			must(t, err)
			if len(page.Parts) != 2 || !aws.ToBool(page.IsTruncated) || aws.ToString(page.NextPartNumberMarker) != "2" {
				t.Fatalf("ListParts max 2: %d parts truncated %v next %q", len(page.Parts), aws.ToBool(page.IsTruncated), aws.ToString(page.NextPartNumberMarker))
			}
			page, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("big.bin"), UploadId: aws.String(m.id),
				PartNumberMarker: page.NextPartNumberMarker})
			must(t, err)
			if len(page.Parts) != 1 || aws.ToInt32(page.Parts[0].PartNumber) != 3 || aws.ToBool(page.IsTruncated) {
				t.Errorf("ListParts after 2: %+v", page.Parts)
			}
		})
		t.Run("ListMultipartUploads", func(t *testing.T) {
			other := createMPU(t, c, b, "other/key")
			out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b)})
			must(t, err)
			var got []string
			for _, u := range out.Uploads {
				got = append(got, aws.ToString(u.Key)+"="+aws.ToString(u.UploadId))
			}
			want := []string{"big.bin=" + m.id, "other/key=" + other.id}
			if !slices.Equal(got, want) {
				t.Errorf("uploads %v, want %v", got, want)
			}
			out, err = c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b), Prefix: aws.String("other/")})
			must(t, err)
			if len(out.Uploads) != 1 {
				t.Errorf("uploads under other/: %d", len(out.Uploads))
			}
			_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("other/key"), UploadId: aws.String(other.id)})
			must(t, err)
		})
		// Not visible before Complete.
		_, _, err := tryGet(c, b, "big.bin")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")

		out := m.complete()
		if want := multipartETag(p1, p2, p3); aws.ToString(out.ETag) != want {
			t.Errorf("Complete ETag = %s, want %s", aws.ToString(out.ETag), want)
		}
		if aws.ToString(out.VersionId) == "" || aws.ToString(out.Key) != "big.bin" || aws.ToString(out.Bucket) != b {
			t.Errorf("Complete answered %+v", out)
		}
		got, g := get(t, c, b, "big.bin")
		wantBytes(t, got, whole)
		if aws.ToString(g.ETag) != multipartETag(p1, p2, p3) || aws.ToString(g.ContentType) != "application/x-test" || g.Metadata["purpose"] != "mpu" {
			t.Errorf("GET: etag %s type %q meta %v", aws.ToString(g.ETag), aws.ToString(g.ContentType), g.Metadata)
		}
		up, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(b)})
		must(t, err)
		if len(up.Uploads) != 0 {
			t.Errorf("uploads after Complete: %d", len(up.Uploads))
		}
		// A completed upload is gone.
		_, err = m.tryPart(4, p3)
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")

		t.Run("PartNumber", func(t *testing.T) {
			var start int64
			for n, want := range [][]byte{p1, p2, p3} {
				got, out, err := tryGet(c, b, "big.bin", func(in *s3.GetObjectInput) { in.PartNumber = aws.Int32(int32(n + 1)) })
				must(t, err)
				wantBytes(t, got, want)
				if aws.ToInt32(out.PartsCount) != 3 {
					t.Errorf("part %d: PartsCount %d", n+1, aws.ToInt32(out.PartsCount))
				}
				if wantRange := fmt.Sprintf("bytes %d-%d/%d", start, start+int64(len(want))-1, len(whole)); aws.ToString(out.ContentRange) != wantRange {
					t.Errorf("part %d: Content-Range %q, want %q", n+1, aws.ToString(out.ContentRange), wantRange)
				}
				start += int64(len(want))
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("big.bin"), PartNumber: aws.Int32(3)})
			must(t, err)
			if aws.ToInt64(h.ContentLength) != int64(len(p3)) || aws.ToInt32(h.PartsCount) != 3 {
				t.Errorf("HEAD part 3: length %d parts %d", aws.ToInt64(h.ContentLength), aws.ToInt32(h.PartsCount))
			}
			_, _, err = tryGet(c, b, "big.bin", func(in *s3.GetObjectInput) { in.PartNumber = aws.Int32(4) })
			wantErr(t, err, http.StatusBadRequest, "InvalidPart")
		})
	})

	t.Run("Abort", func(t *testing.T) {
		m := createMPU(t, c, b, "aborted")
		m.part(1, p3)
		out, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("aborted"), UploadId: aws.String(m.id)})
		must(t, err)
		if got := rawStatus(t, out.ResultMetadata); got != http.StatusNoContent {
			t.Errorf("Abort status %d, want 204", got)
		}
		_, err = m.tryPart(2, p3)
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
		_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("aborted"), UploadId: aws.String(m.id)})
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
		_, err = m.tryComplete(m.parts)
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
		_, err = c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("aborted"), UploadId: aws.String(m.id)})
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
		_, _, err = tryGet(c, b, "aborted")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})
	t.Run("PartDigest", func(t *testing.T) {
		m := createMPU(t, c, b, "digest")
		other := md5.Sum([]byte("other"))
		_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("digest"), UploadId: aws.String(m.id),
			PartNumber: aws.Int32(1), Body: bytes.NewReader(p3), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(other[:]))})
		wantErr(t, err, http.StatusBadRequest, "BadDigest")
		_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("digest"), UploadId: aws.String(m.id),
			PartNumber: aws.Int32(1), Body: bytes.NewReader(p3), ChecksumSHA256: aws.String(sumOf(types.ChecksumAlgorithmSha256, p1))})
		wantErr(t, err, http.StatusBadRequest, "BadDigest")
		lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String("digest"), UploadId: aws.String(m.id)})
		must(t, err)
		if len(lp.Parts) != 0 {
			t.Errorf("a refused part was kept: %+v", lp.Parts)
		}
	})
	t.Run("ListMultipartUploadsPagination", func(t *testing.T) {
		const pb = "multi-pages"
		createBucket(t, c, pb)
		var want []string
		for _, k := range []string{"a", "b", "b", "c/d", "e"} {
			want = append(want, k+"="+createMPU(t, c, pb, k).id)
		}
		slices.Sort(want) // key order, then upload ID order for the same key
		var got []string
		in := &s3.ListMultipartUploadsInput{Bucket: aws.String(pb), MaxUploads: aws.Int32(2)}
		for i := 0; ; i++ {
			out, err := c.ListMultipartUploads(ctx, in)
			must(t, err)
			if len(out.Uploads) > 2 {
				t.Fatalf("page of %d uploads", len(out.Uploads))
			}
			for _, u := range out.Uploads {
				got = append(got, aws.ToString(u.Key)+"="+aws.ToString(u.UploadId))
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			if i > 10 {
				t.Fatal("pagination does not end")
			}
			in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged uploads %v, want %v", got, want)
		}
		out, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(pb), Delimiter: aws.String("/")})
		must(t, err)
		if len(out.CommonPrefixes) != 1 || aws.ToString(out.CommonPrefixes[0].Prefix) != "c/" || len(out.Uploads) != 4 {
			t.Errorf("delimited uploads: %d uploads, prefixes %+v", len(out.Uploads), out.CommonPrefixes)
		}
	})
	t.Run("WrongUploadID", func(t *testing.T) {
		m := createMPU(t, c, b, "right-key")
		_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("wrong-key"), UploadId: aws.String(m.id),
			PartNumber: aws.Int32(1), Body: bytes.NewReader(p3)})
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
		_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(b), Key: aws.String("right-key"), UploadId: aws.String("bogus"),
			PartNumber: aws.Int32(1), Body: bytes.NewReader(p3)})
		wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
		_, err = m.tryPart(10001, p3)
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	})

	t.Run("CompleteErrors", func(t *testing.T) {
		m := createMPU(t, c, b, "errors")
		m.part(1, p1)
		m.part(2, p3)
		_, err := m.tryComplete([]types.CompletedPart{m.parts[1], m.parts[0]})
		wantErr(t, err, http.StatusBadRequest, "InvalidPartOrder")
		_, err = m.tryComplete([]types.CompletedPart{m.parts[0], {PartNumber: aws.Int32(2), ETag: aws.String(etagOf([]byte("other")))}})
		wantErr(t, err, http.StatusBadRequest, "InvalidPart")
		_, err = m.tryComplete([]types.CompletedPart{m.parts[0], {PartNumber: aws.Int32(3), ETag: m.parts[1].ETag}})
		wantErr(t, err, http.StatusBadRequest, "InvalidPart")
		// The upload survives failed completes.
		out := m.complete()
		if aws.ToString(out.ETag) != multipartETag(p1, p3) {
			t.Errorf("ETag %s", aws.ToString(out.ETag))
		}

		// A conditional Complete honours If-None-Match like a PUT.
		cond := createMPU(t, c, b, "errors")
		cond.part(1, p3)
		_, err = cond.tryComplete(cond.parts, func(in *s3.CompleteMultipartUploadInput) { in.IfNoneMatch = aws.String("*") })
		wantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		got, _ := get(t, c, b, "errors")
		wantBytes(t, got, slices.Concat(p1, p3))

		small := createMPU(t, c, b, "too-small")
		small.part(1, p3)
		small.part(2, p3)
		_, err = small.tryComplete(small.parts)
		wantErr(t, err, http.StatusBadRequest, "EntityTooSmall")
		// A single small part is fine: it is the last.
		_, err = small.tryComplete(small.parts[:1])
		must(t, err)
	})

	t.Run("UploadPartCopy", func(t *testing.T) {
		src := randBytes("copy-src", 11*mib+5)
		put(t, c, b, "copy-src", src)
		m := createMPU(t, c, b, "copied")
		copyPart := func(n int32, rng string) (*s3.UploadPartCopyOutput, error) {
			in := &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String("copied"), UploadId: aws.String(m.id),
				PartNumber: aws.Int32(n), CopySource: aws.String(b + "/copy-src")}
			if rng != "" {
				in.CopySourceRange = aws.String(rng)
			}
			return c.UploadPartCopy(ctx, in)
		}
		ranges := [][2]int{{0, 5*mib - 1}, {5 * mib, 10*mib + 2}, {10*mib + 3, len(src) - 1}}
		for i, r := range ranges {
			out, err := copyPart(int32(i+1), fmt.Sprintf("bytes=%d-%d", r[0], r[1]))
			must(t, err)
			if want := etagOf(src[r[0] : r[1]+1]); aws.ToString(out.CopyPartResult.ETag) != want {
				t.Errorf("copy part %d ETag %s, want %s", i+1, aws.ToString(out.CopyPartResult.ETag), want)
			}
			m.parts = append(m.parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: out.CopyPartResult.ETag})
		}
		_, err := copyPart(9, fmt.Sprintf("bytes=%d-%d", len(src), len(src)+10))
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		m.complete()
		got, _ := get(t, c, b, "copied")
		wantBytes(t, got, src)

		// A whole-object copy part, mixed with an uploaded part.
		w := createMPU(t, c, b, "copied-whole")
		out, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(b), Key: aws.String("copied-whole"), UploadId: aws.String(w.id),
			PartNumber: aws.Int32(1), CopySource: aws.String(b + "/copy-src")})
		must(t, err)
		w.parts = append(w.parts, types.CompletedPart{PartNumber: aws.Int32(1), ETag: out.CopyPartResult.ETag})
		w.part(2, p3)
		w.complete()
		got, _ = get(t, c, b, "copied-whole")
		wantBytes(t, got, slices.Concat(src, p3))
	})

	t.Run("Checksums", func(t *testing.T) {
		a, z := randBytes("ck-a", 5*mib), randBytes("ck-z", 333)
		for _, tc := range []struct {
			alg  types.ChecksumAlgorithm
			typ  types.ChecksumType // "" = the server's default
			want types.ChecksumType
		}{
			{types.ChecksumAlgorithmCrc32, "", types.ChecksumTypeComposite},
			{types.ChecksumAlgorithmCrc32, types.ChecksumTypeFullObject, types.ChecksumTypeFullObject},
			{types.ChecksumAlgorithmCrc32c, types.ChecksumTypeComposite, types.ChecksumTypeComposite},
			{types.ChecksumAlgorithmSha256, "", types.ChecksumTypeComposite},
			{types.ChecksumAlgorithmSha1, "", types.ChecksumTypeComposite},
			{types.ChecksumAlgorithmCrc64nvme, "", types.ChecksumTypeFullObject},
		} {
			t.Run(fmt.Sprintf("%s/%s", tc.alg, tc.want), func(t *testing.T) {
				key := fmt.Sprintf("ck/%s-%s", tc.alg, tc.typ)
				m := createMPU(t, c, b, key, func(in *s3.CreateMultipartUploadInput) {
					in.ChecksumAlgorithm, in.ChecksumType = tc.alg, tc.typ
				})
				m.part(1, a)
				m.part(2, z)
				for i, p := range m.parts {
					if got := checksumOf(tc.alg, p.ChecksumCRC32, p.ChecksumCRC32C, p.ChecksumCRC64NVME, p.ChecksumSHA1, p.ChecksumSHA256); got != sumOf(tc.alg, [][]byte{a, z}[i]) {
						t.Errorf("part %d checksum %q, want %q", i+1, got, sumOf(tc.alg, [][]byte{a, z}[i]))
					}
				}
				out := m.complete()
				want := compositeSum(tc.alg, a, z)
				if tc.want == types.ChecksumTypeFullObject {
					want = sumOf(tc.alg, slices.Concat(a, z))
				}
				if got := checksumOf(tc.alg, out.ChecksumCRC32, out.ChecksumCRC32C, out.ChecksumCRC64NVME, out.ChecksumSHA1, out.ChecksumSHA256); got != want || out.ChecksumType != tc.want {
					t.Errorf("Complete checksum %q type %q, want %q %q", got, out.ChecksumType, want, tc.want)
				}
				h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
				must(t, err)
				if got := checksumOf(tc.alg, h.ChecksumCRC32, h.ChecksumCRC32C, h.ChecksumCRC64NVME, h.ChecksumSHA1, h.ChecksumSHA256); got != want || h.ChecksumType != tc.want {
					t.Errorf("HEAD checksum %q type %q, want %q %q", got, h.ChecksumType, want, tc.want)
				}
				// The SDK validates full-object checksums of a GET itself.
				got, _ := get(t, c, b, key, func(in *s3.GetObjectInput) { in.ChecksumMode = types.ChecksumModeEnabled })
				wantBytes(t, got, slices.Concat(a, z))
				_, err = c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(b), Key: aws.String(key), UploadId: aws.String(m.id)})
				wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
			})
		}
		t.Run("WrongPartChecksumInComplete", func(t *testing.T) {
			m := createMPU(t, c, b, "ck/wrong", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256 })
			m.part(1, z)
			parts := slices.Clone(m.parts)
			parts[0].ChecksumSHA256 = aws.String(sumOf(types.ChecksumAlgorithmSha256, a))
			_, err := m.tryComplete(parts)
			wantErr(t, err, http.StatusBadRequest, "InvalidPart")
		})
		t.Run("WrongFullObjectChecksumInComplete", func(t *testing.T) {
			// With FULL_OBJECT the client may state the whole object's
			// checksum on Complete "as a data integrity check"; S3 refuses
			// a wrong one (400) rather than storing an object whose
			// checksum differs from what the client asserted.
			m := createMPU(t, c, b, "ck/wrong-full", func(in *s3.CreateMultipartUploadInput) {
				in.ChecksumAlgorithm, in.ChecksumType = types.ChecksumAlgorithmCrc64nvme, types.ChecksumTypeFullObject
			})
			m.part(1, z)
			_, err := m.tryComplete(m.parts, func(in *s3.CompleteMultipartUploadInput) {
				in.ChecksumType = types.ChecksumTypeFullObject
				in.ChecksumCRC64NVME = aws.String(sumOf(types.ChecksumAlgorithmCrc64nvme, a))
			})
			wantErr(t, err, http.StatusBadRequest, "")
		})
		t.Run("MismatchedPartAlgorithm", func(t *testing.T) {
			m := createMPU(t, c, b, "ck/mixed", func(in *s3.CreateMultipartUploadInput) { in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256 })
			m.alg = types.ChecksumAlgorithmCrc32c
			_, err := m.tryPart(1, z)
			wantErr(t, err, http.StatusBadRequest, "InvalidRequest")
		})
	})
}

// checksumOf picks the field of alg among a response's checksum fields.
func checksumOf(alg types.ChecksumAlgorithm, crc32, crc32c, crc64, sha1, sha256 *string) string {
	switch alg {
	case types.ChecksumAlgorithmCrc32:
		return aws.ToString(crc32)
	case types.ChecksumAlgorithmCrc32c:
		return aws.ToString(crc32c)
	case types.ChecksumAlgorithmCrc64nvme:
		return aws.ToString(crc64)
	case types.ChecksumAlgorithmSha1:
		return aws.ToString(sha1)
	case types.ChecksumAlgorithmSha256:
		return aws.ToString(sha256)
	}
	return ""
}

// onlyReader hides Seek and Len, so a client sees a stream of unknown
// size.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestMultipartClients(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "uploaders"
	createBucket(t, c, b)

	t.Run("TransferManager", func(t *testing.T) {
		tm := transfermanager.New(c, func(o *transfermanager.Options) {
			o.PartSizeBytes = 5 * mib
			o.MultipartUploadThreshold = 8 * mib
			o.Concurrency = 3
		})
		for _, tc := range []struct {
			name  string
			size  int
			parts int
			body  func([]byte) io.Reader
		}{
			{"single", 2 * mib, 0, func(d []byte) io.Reader { return bytes.NewReader(d) }},
			{"multi", 11*mib + 3, 3, func(d []byte) io.Reader { return bytes.NewReader(d) }},
			{"stream", 11 * mib, 3, func(d []byte) io.Reader { return onlyReader{bytes.NewReader(d)} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				data := randBytes("tm-"+tc.name, tc.size)
				out, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: aws.String(b), Key: aws.String("tm/" + tc.name),
					Body: tc.body(data), ContentType: aws.String("application/x-tm")})
				must(t, err)
				h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("tm/" + tc.name), ChecksumMode: types.ChecksumModeEnabled})
				must(t, err)
				etag := aws.ToString(h.ETag)
				if tc.parts == 0 {
					if etag != etagOf(data) {
						t.Errorf("ETag %s, want %s", etag, etagOf(data))
					}
				} else if !strings.HasSuffix(etag, fmt.Sprintf(`-%d"`, tc.parts)) {
					t.Errorf("ETag %s, want a %d-part ETag", etag, tc.parts)
				}
				if aws.ToString(out.ETag) != etag || aws.ToString(h.ContentType) != "application/x-tm" {
					t.Errorf("upload ETag %s, HEAD %s, type %q", aws.ToString(out.ETag), etag, aws.ToString(h.ContentType))
				}
				// transfermanager asks for CRC32 by default.
				if h.ChecksumType == types.ChecksumTypeFullObject && aws.ToString(h.ChecksumCRC32) != sumOf(types.ChecksumAlgorithmCrc32, data) {
					t.Errorf("full-object CRC32 %q, want %q", aws.ToString(h.ChecksumCRC32), sumOf(types.ChecksumAlgorithmCrc32, data))
				}
				got, _ := get(t, c, b, "tm/"+tc.name)
				wantBytes(t, got, data)
				dl, err := tm.GetObject(ctx, &transfermanager.GetObjectInput{Bucket: aws.String(b), Key: aws.String("tm/" + tc.name)})
				must(t, err)
				got, err = io.ReadAll(dl.Body)
				must(t, err)
				wantBytes(t, got, data)
			})
		}
	})

	t.Run("MinioUnknownSize", func(t *testing.T) {
		// 20 MiB+ from a stream of unknown size: minio-go buffers 5 MiB parts
		// and signs each in STREAMING-AWS4-HMAC-SHA256-PAYLOAD chunks.
		mc := newMinio(t, srv)
		data := randBytes("minio-stream", 21*mib+11)
		info, err := mc.PutObject(ctx, b, "minio/stream", onlyReader{bytes.NewReader(data)}, -1,
			minio.PutObjectOptions{PartSize: 5 * mib, ContentType: "application/x-minio", UserMetadata: map[string]string{"via": "minio"}})
		must(t, err)
		if info.Size != int64(len(data)) || !strings.HasSuffix(info.ETag, "-5") {
			t.Errorf("minio upload: size %d etag %s", info.Size, info.ETag)
		}
		got, g := get(t, c, b, "minio/stream")
		wantBytes(t, got, data)
		if aws.ToString(g.ContentType) != "application/x-minio" || g.Metadata["via"] != "minio" {
			t.Errorf("type %q meta %v", aws.ToString(g.ContentType), g.Metadata)
		}
	})
	t.Run("MinioChecksumTrailers", func(t *testing.T) {
		// With TrailingHeaders the parts carry signed checksum trailers
		// (STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER).
		mc := newMinio(t, srv, func(o *minio.Options) { o.TrailingHeaders = true })
		data := randBytes("minio-ck", 10*mib+1)
		_, err := mc.PutObject(ctx, b, "minio/ck", bytes.NewReader(data), int64(len(data)),
			minio.PutObjectOptions{PartSize: 5 * mib, Checksum: minio.ChecksumCRC32C})
		must(t, err)
		got, g := get(t, c, b, "minio/ck", func(in *s3.GetObjectInput) { in.ChecksumMode = types.ChecksumModeEnabled })
		wantBytes(t, got, data)
		if want := compositeSum(types.ChecksumAlgorithmCrc32c, data[:5*mib], data[5*mib:10*mib], data[10*mib:]); aws.ToString(g.ChecksumCRC32C) != want &&
			aws.ToString(g.ChecksumCRC32C) != sumOf(types.ChecksumAlgorithmCrc32c, data) {
			t.Errorf("CRC32C %q, want %q (composite) or the full-object value", aws.ToString(g.ChecksumCRC32C), want)
		}
	})
	t.Run("MinioMD5Parts", func(t *testing.T) {
		mc := newMinio(t, srv)
		data := randBytes("minio-md5", 10*mib+1)
		_, err := mc.PutObject(ctx, b, "minio/md5", bytes.NewReader(data), int64(len(data)),
			minio.PutObjectOptions{PartSize: 5 * mib, SendContentMd5: true})
		must(t, err)
		got, _ := get(t, c, b, "minio/md5")
		wantBytes(t, got, data)
	})
}
