package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/nastest"
)

func TestObjectRoundTrip(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	mc := newMinio(t, srv)
	ctx := context.Background()
	const b = "sizes"
	createBucket(t, c, b)

	sizes := []int{0, 1, 4 << 10, 64<<10 + 1, 5<<20 + 3}
	for _, n := range sizes {
		t.Run(fmt.Sprintf("aws/%d", n), func(t *testing.T) {
			key := fmt.Sprintf("aws/%d.bin", n)
			data := randBytes(key, n)
			out := put(t, c, b, key, data)
			if got := aws.ToString(out.ETag); got != etagOf(data) {
				t.Errorf("PUT ETag = %s, want %s", got, etagOf(data))
			}
			if aws.ToString(out.VersionId) == "" {
				t.Error("PUT returned no version ID")
			}
			got, gout := get(t, c, b, key)
			wantBytes(t, got, data)
			if aws.ToString(gout.ETag) != etagOf(data) || aws.ToInt64(gout.ContentLength) != int64(n) {
				t.Errorf("GET ETag %s length %d, want %s %d", aws.ToString(gout.ETag), aws.ToInt64(gout.ContentLength), etagOf(data), n)
			}
			h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
			must(t, err)
			if aws.ToString(h.ETag) != etagOf(data) || aws.ToInt64(h.ContentLength) != int64(n) {
				t.Errorf("HEAD ETag %s length %d, want %s %d", aws.ToString(h.ETag), aws.ToInt64(h.ContentLength), etagOf(data), n)
			}
			if h.LastModified == nil || time.Since(*h.LastModified) > time.Minute {
				t.Errorf("LastModified = %v", h.LastModified)
			}
		})
		// minio-go signs the body in STREAMING-AWS4-HMAC-SHA256-PAYLOAD
		// chunks over plain HTTP; read back with the other client.
		t.Run(fmt.Sprintf("minio/%d", n), func(t *testing.T) {
			key := fmt.Sprintf("minio/%d.bin", n)
			data := randBytes(key, n)
			info, err := mc.PutObject(ctx, b, key, bytes.NewReader(data), int64(n), minio.PutObjectOptions{})
			must(t, err)
			if `"`+info.ETag+`"` != etagOf(data) {
				t.Errorf("minio PUT ETag = %s, want %s", info.ETag, etagOf(data))
			}
			got, _ := get(t, c, b, key)
			wantBytes(t, got, data)
			obj, err := mc.GetObject(ctx, b, key, minio.GetObjectOptions{})
			must(t, err)
			mgot, err := io.ReadAll(obj)
			must(t, err)
			wantBytes(t, mgot, data)
		})
	}
}

func TestObjectMetadata(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "meta"
	createBucket(t, c, b)

	expires := time.Date(2031, 7, 1, 12, 0, 0, 0, time.UTC)
	put(t, c, b, "doc.txt", []byte("hello"), func(in *s3.PutObjectInput) {
		in.Metadata = map[string]string{"color": "blue", "Camel-Case": "Mixed Value", "empty-ish": "x y"}
		in.ContentType = aws.String("text/plain; charset=utf-8")
		in.ContentDisposition = aws.String(`attachment; filename="doc.txt"`)
		in.ContentEncoding = aws.String("gzip")
		in.CacheControl = aws.String("max-age=60, private")
		in.ContentLanguage = aws.String("fr-CA")
		in.Expires = &expires
	})
	wantMeta := map[string]string{"color": "blue", "camel-case": "Mixed Value", "empty-ish": "x y"}
	check := func(t *testing.T, meta map[string]string, ctype, disp, enc, cache, lang, exp *string) {
		t.Helper()
		for k, v := range wantMeta {
			if meta[k] != v {
				t.Errorf("metadata %q = %q, want %q (all: %v)", k, meta[k], v, meta)
			}
		}
		if len(meta) != len(wantMeta) {
			t.Errorf("metadata = %v, want %v", meta, wantMeta)
		}
		for _, f := range []struct{ name, got, want string }{
			{"Content-Type", aws.ToString(ctype), "text/plain; charset=utf-8"},
			{"Content-Disposition", aws.ToString(disp), `attachment; filename="doc.txt"`},
			{"Content-Encoding", aws.ToString(enc), "gzip"},
			{"Cache-Control", aws.ToString(cache), "max-age=60, private"},
			{"Content-Language", aws.ToString(lang), "fr-CA"},
			{"Expires", aws.ToString(exp), expires.Format(http.TimeFormat)},
		} {
			if f.got != f.want {
				t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
			}
		}
	}
	t.Run("Head", func(t *testing.T) {
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("doc.txt")})
		must(t, err)
		check(t, h.Metadata, h.ContentType, h.ContentDisposition, h.ContentEncoding, h.CacheControl, h.ContentLanguage, h.ExpiresString)
	})
	t.Run("Get", func(t *testing.T) {
		body, g := get(t, c, b, "doc.txt")
		if string(body) != "hello" {
			t.Errorf("body = %q", body)
		}
		check(t, g.Metadata, g.ContentType, g.ContentDisposition, g.ContentEncoding, g.CacheControl, g.ContentLanguage, g.ExpiresString)
	})
	t.Run("MinioStat", func(t *testing.T) {
		mc := newMinio(t, srv)
		info, err := mc.StatObject(ctx, b, "doc.txt", minio.StatObjectOptions{})
		must(t, err)
		if info.UserMetadata["Color"] != "blue" || info.ContentType != "text/plain; charset=utf-8" {
			t.Errorf("minio stat: metadata %v content type %q", info.UserMetadata, info.ContentType)
		}
	})
	t.Run("ResponseOverrides", func(t *testing.T) {
		rexp := time.Date(2040, 1, 2, 3, 4, 5, 0, time.UTC)
		_, g := get(t, c, b, "doc.txt", func(in *s3.GetObjectInput) {
			in.ResponseContentType = aws.String("text/csv")
			in.ResponseContentDisposition = aws.String("inline")
			in.ResponseCacheControl = aws.String("no-cache")
			in.ResponseContentLanguage = aws.String("de")
			in.ResponseContentEncoding = aws.String("identity")
			in.ResponseExpires = &rexp
		})
		for _, f := range []struct{ name, got, want string }{
			{"Content-Type", aws.ToString(g.ContentType), "text/csv"},
			{"Content-Disposition", aws.ToString(g.ContentDisposition), "inline"},
			{"Cache-Control", aws.ToString(g.CacheControl), "no-cache"},
			{"Content-Language", aws.ToString(g.ContentLanguage), "de"},
			{"Content-Encoding", aws.ToString(g.ContentEncoding), "identity"},
			{"Expires", aws.ToString(g.ExpiresString), rexp.Format(http.TimeFormat)},
		} {
			if f.got != f.want {
				t.Errorf("%s = %q, want %q", f.name, f.got, f.want)
			}
		}
		// The override is per response: the stored headers are unchanged.
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("doc.txt")})
		must(t, err)
		if aws.ToString(h.ContentType) != "text/plain; charset=utf-8" {
			t.Errorf("stored Content-Type changed to %q", aws.ToString(h.ContentType))
		}
	})
	t.Run("DefaultContentType", func(t *testing.T) {
		// The SDKs always send a Content-Type; a bare PUT gets S3's default.
		status, _, body := do(t, rawRequest(t, http.MethodPut, srv.Endpoint+"/"+b+"/untyped", []byte("x"), time.Now(), owner, nil))
		if status != 200 {
			t.Fatalf("raw PUT: %d %s", status, body)
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("untyped")})
		must(t, err)
		if aws.ToString(h.ContentType) != "binary/octet-stream" {
			t.Errorf("default Content-Type %q, want binary/octet-stream", aws.ToString(h.ContentType))
		}
	})
	t.Run("MetadataTooLarge", func(t *testing.T) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("big-meta"), Body: strings.NewReader("x"),
			Metadata: map[string]string{"big": strings.Repeat("m", 2100)}})
		wantErr(t, err, http.StatusBadRequest, "MetadataTooLarge")
	})
}

func TestConditionalPut(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "cond"
	createBucket(t, c, b)
	putIf := func(key, body string, tune func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: strings.NewReader(body)}
		tune(in)
		return c.PutObject(ctx, in)
	}

	t.Run("IfNoneMatchStar", func(t *testing.T) {
		_, err := putIf("once", "first", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
		must(t, err)
		_, err = putIf("once", "second", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
		wantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		got, _ := get(t, c, b, "once")
		if string(got) != "first" {
			t.Errorf("body after refused PUT = %q, want first", got)
		}
	})
	t.Run("IfMatch", func(t *testing.T) {
		out := put(t, c, b, "cas", []byte("v1"))
		_, err := putIf("cas", "v2", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(`"0123456789abcdef0123456789abcdef"`) })
		wantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		_, err = putIf("cas", "v2", func(in *s3.PutObjectInput) { in.IfMatch = out.ETag })
		must(t, err)
		got, _ := get(t, c, b, "cas")
		if string(got) != "v2" {
			t.Errorf("body = %q, want v2", got)
		}
	})
	t.Run("IfNoneMatchAfterDelete", func(t *testing.T) {
		put(t, c, b, "recreated", []byte("v1"))
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("recreated")})
		must(t, err)
		_, err = putIf("recreated", "v2", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
		must(t, err)
	})
	t.Run("IfMatchMissingKey", func(t *testing.T) {
		_, err := putIf("absent", "v", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(`"0123456789abcdef0123456789abcdef"`) })
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})
}

func TestGetObjectRanges(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "ranges"
	createBucket(t, c, b)
	data := randBytes("ranges", 1000)
	put(t, c, b, "obj", data)

	for _, tc := range []struct {
		rng        string
		start, end int // inclusive
	}{
		{"bytes=10-19", 10, 19},
		{"bytes=0-0", 0, 0},
		{"bytes=990-", 990, 999},
		{"bytes=-7", 993, 999},
		{"bytes=995-2000", 995, 999},
		{"bytes=-5000", 0, 999},
	} {
		t.Run(tc.rng, func(t *testing.T) {
			got, out := get(t, c, b, "obj", func(in *s3.GetObjectInput) { in.Range = aws.String(tc.rng) })
			wantBytes(t, got, data[tc.start:tc.end+1])
			if want := fmt.Sprintf("bytes %d-%d/1000", tc.start, tc.end); aws.ToString(out.ContentRange) != want {
				t.Errorf("Content-Range = %q, want %q", aws.ToString(out.ContentRange), want)
			}
			if aws.ToInt64(out.ContentLength) != int64(tc.end-tc.start+1) {
				t.Errorf("Content-Length = %d", aws.ToInt64(out.ContentLength))
			}
			if aws.ToString(out.ETag) != etagOf(data) {
				t.Errorf("ranged ETag = %s, want the object's %s", aws.ToString(out.ETag), etagOf(data))
			}
			if rawStatus(t, out.ResultMetadata) != http.StatusPartialContent {
				t.Errorf("status %d, want 206", rawStatus(t, out.ResultMetadata))
			}
		})
	}
	for _, rng := range []string{"bytes=1000-", "bytes=5000-6000"} {
		t.Run(rng, func(t *testing.T) {
			_, _, err := tryGet(c, b, "obj", func(in *s3.GetObjectInput) { in.Range = aws.String(rng) })
			wantErr(t, err, http.StatusRequestedRangeNotSatisfiable, "InvalidRange")
		})
	}
}

func TestGetObjectConditions(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "conds"
	createBucket(t, c, b)
	data := []byte("conditional body")
	put(t, c, b, "obj", data)
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("obj")})
	must(t, err)
	etag, lm := aws.ToString(h.ETag), *h.LastModified
	past, future := lm.Add(-time.Hour), lm.Add(time.Hour)
	other := `"ffffffffffffffffffffffffffffffff"`

	for _, tc := range []struct {
		name   string
		tune   func(*s3.GetObjectInput)
		status int // 200, or the error status
		code   string
	}{
		{"IfMatch", func(in *s3.GetObjectInput) { in.IfMatch = aws.String(etag) }, 200, ""},
		{"IfMatchStar", func(in *s3.GetObjectInput) { in.IfMatch = aws.String("*") }, 200, ""},
		{"IfMatchOther", func(in *s3.GetObjectInput) { in.IfMatch = aws.String(other) }, 412, "PreconditionFailed"},
		{"IfNoneMatch", func(in *s3.GetObjectInput) { in.IfNoneMatch = aws.String(etag) }, 304, ""},
		{"IfNoneMatchOther", func(in *s3.GetObjectInput) { in.IfNoneMatch = aws.String(other) }, 200, ""},
		{"IfModifiedSincePast", func(in *s3.GetObjectInput) { in.IfModifiedSince = &past }, 200, ""},
		{"IfModifiedSinceFuture", func(in *s3.GetObjectInput) { in.IfModifiedSince = &future }, 304, ""},
		{"IfModifiedSinceExact", func(in *s3.GetObjectInput) { in.IfModifiedSince = &lm }, 304, ""},
		{"IfUnmodifiedSincePast", func(in *s3.GetObjectInput) { in.IfUnmodifiedSince = &past }, 412, "PreconditionFailed"},
		{"IfUnmodifiedSinceFuture", func(in *s3.GetObjectInput) { in.IfUnmodifiedSince = &future }, 200, ""},
		// S3: If-Match true overrides a false If-Unmodified-Since.
		{"IfMatchAndUnmodifiedSincePast", func(in *s3.GetObjectInput) {
			in.IfMatch, in.IfUnmodifiedSince = aws.String(etag), &past
		}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := tryGet(c, b, "obj", tc.tune)
			if tc.status == 200 {
				must(t, err)
				wantBytes(t, got, data)
				return
			}
			wantErr(t, err, tc.status, tc.code)
		})
	}
	t.Run("HeadIfNoneMatch", func(t *testing.T) {
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("obj"), IfNoneMatch: aws.String(etag)})
		wantErr(t, err, http.StatusNotModified, "")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("obj"), IfMatch: aws.String(other)})
		wantErr(t, err, http.StatusPreconditionFailed, "")
	})
}

func TestDeleteObjects(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "deletes"
	createBucket(t, c, b)

	t.Run("DeleteObject", func(t *testing.T) {
		put(t, c, b, "gone", []byte("x"))
		out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("gone")})
		must(t, err)
		if got := rawStatus(t, out.ResultMetadata); got != http.StatusNoContent {
			t.Errorf("DeleteObject status %d, want 204", got)
		}
		if aws.ToString(out.VersionId) == "" || !aws.ToBool(out.DeleteMarker) {
			t.Errorf("DeleteObject: version %q delete marker %v, want a delete marker version", aws.ToString(out.VersionId), aws.ToBool(out.DeleteMarker))
		}
		_, _, err = tryGet(c, b, "gone")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("gone")})
		wantErr(t, err, http.StatusNotFound, "")
		// Deleting an absent key succeeds too.
		out, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("never-was")})
		must(t, err)
		if got := rawStatus(t, out.ResultMetadata); got != http.StatusNoContent {
			t.Errorf("DeleteObject of an absent key: status %d, want 204", got)
		}
	})

	t.Run("DeleteIfMatch", func(t *testing.T) {
		out := put(t, c, b, "guarded-delete", []byte("x"))
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("guarded-delete"),
			IfMatch: aws.String(`"ffffffffffffffffffffffffffffffff"`)})
		wantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("guarded-delete")})
		must(t, err)
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("guarded-delete"), IfMatch: out.ETag})
		must(t, err)
	})
	t.Run("DeleteObjectsLimit", func(t *testing.T) {
		ids := make([]types.ObjectIdentifier, 1001)
		for i := range ids {
			ids[i] = types.ObjectIdentifier{Key: aws.String(fmt.Sprintf("k%d", i))}
		}
		_, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{Objects: ids}})
		wantErr(t, err, http.StatusBadRequest, "MalformedXML")
		_, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{Objects: ids[:1000]}})
		must(t, err)
	})
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("DeleteObjects/quiet=%v", quiet), func(t *testing.T) {
			p := fmt.Sprintf("q%v/", quiet)
			put(t, c, b, p+"a", []byte("a"))
			put(t, c, b, p+"b", []byte("b"))
			put(t, c, b, p+"keep", []byte("k"))
			out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{
				Quiet:   aws.Bool(quiet),
				Objects: []types.ObjectIdentifier{{Key: aws.String(p + "a")}, {Key: aws.String(p + "b")}, {Key: aws.String(p + "missing")}},
			}})
			must(t, err)
			if len(out.Errors) != 0 {
				t.Errorf("DeleteObjects errors: %+v", out.Errors)
			}
			var deleted []string
			for _, d := range out.Deleted {
				deleted = append(deleted, aws.ToString(d.Key))
			}
			want := []string{p + "a", p + "b", p + "missing"}
			if quiet {
				want = nil
			}
			if strings.Join(deleted, ",") != strings.Join(want, ",") {
				t.Errorf("Deleted = %v, want %v", deleted, want)
			}
			if keys := listAll(t, c, b, p); strings.Join(keys, ",") != p+"keep" {
				t.Errorf("after DeleteObjects the prefix lists %v", keys)
			}
		})
	}
}

func TestCopyObject(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "copies"
	createBucket(t, c, b)
	createBucket(t, c, "copies-other")
	data := randBytes("copy", 100<<10)
	src := put(t, c, b, "src", data, func(in *s3.PutObjectInput) {
		in.Metadata = map[string]string{"origin": "src"}
		in.ContentType = aws.String("text/plain")
		in.CacheControl = aws.String("max-age=5")
	})
	head := func(t *testing.T, bucket, key string) *s3.HeadObjectOutput {
		t.Helper()
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		must(t, err)
		return h
	}
	copySrc := func(bucket, key string) *string { return aws.String(bucket + "/" + url.PathEscape(key)) }

	t.Run("CopyDirective", func(t *testing.T) {
		out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-copy"), CopySource: copySrc(b, "src"),
			// With the COPY directive S3 ignores metadata in the request.
			Metadata: map[string]string{"ignored": "yes"}})
		must(t, err)
		if aws.ToString(out.CopyObjectResult.ETag) != etagOf(data) {
			t.Errorf("CopyObjectResult ETag = %s, want %s", aws.ToString(out.CopyObjectResult.ETag), etagOf(data))
		}
		if aws.ToString(out.VersionId) == "" || aws.ToString(out.VersionId) == aws.ToString(src.VersionId) {
			t.Errorf("copy version %q: want a new version ID", aws.ToString(out.VersionId))
		}
		h := head(t, b, "dst-copy")
		if h.Metadata["origin"] != "src" || h.Metadata["ignored"] != "" || aws.ToString(h.ContentType) != "text/plain" ||
			aws.ToString(h.CacheControl) != "max-age=5" {
			t.Errorf("COPY kept metadata %v, type %q, cache %q", h.Metadata, aws.ToString(h.ContentType), aws.ToString(h.CacheControl))
		}
		got, _ := get(t, c, b, "dst-copy")
		wantBytes(t, got, data)
	})
	t.Run("ReplaceDirective", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-replace"), CopySource: copySrc(b, "src"),
			MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"fresh": "1"}, ContentType: aws.String("application/json")})
		must(t, err)
		h := head(t, b, "dst-replace")
		if h.Metadata["fresh"] != "1" || h.Metadata["origin"] != "" || aws.ToString(h.ContentType) != "application/json" || h.CacheControl != nil {
			t.Errorf("REPLACE gave metadata %v, type %q, cache %v", h.Metadata, aws.ToString(h.ContentType), aws.ToString(h.CacheControl))
		}
		if aws.ToString(h.ETag) != etagOf(data) {
			t.Errorf("REPLACE changed the ETag to %s", aws.ToString(h.ETag))
		}
	})
	t.Run("OtherBucket", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("copies-other"), Key: aws.String("x"), CopySource: copySrc(b, "src")})
		must(t, err)
		got, _ := get(t, c, "copies-other", "x")
		wantBytes(t, got, data)
	})
	t.Run("ToItself", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("src"), CopySource: copySrc(b, "src")})
		wantErr(t, err, http.StatusBadRequest, "InvalidRequest")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("src"), CopySource: copySrc(b, "src"),
			MetadataDirective: types.MetadataDirectiveReplace, Metadata: map[string]string{"touched": "yes"}, ContentType: aws.String("text/plain")})
		must(t, err)
		h := head(t, b, "src")
		if h.Metadata["touched"] != "yes" || h.Metadata["origin"] != "" {
			t.Errorf("self-copy with REPLACE: metadata %v", h.Metadata)
		}
		got, _ := get(t, c, b, "src")
		wantBytes(t, got, data)
	})
	t.Run("Conditions", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-cond"), CopySource: copySrc(b, "src"),
			CopySourceIfMatch: aws.String(`"ffffffffffffffffffffffffffffffff"`)})
		wantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-cond"), CopySource: copySrc(b, "src"),
			CopySourceIfNoneMatch: aws.String(etagOf(data))})
		wantErr(t, err, http.StatusPreconditionFailed, "PreconditionFailed")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-cond"), CopySource: copySrc(b, "src"),
			CopySourceIfMatch: aws.String(etagOf(data))})
		must(t, err)
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("dst-cond")})
		must(t, err)
	})
	t.Run("LeadingSlashSource", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-slash"), CopySource: aws.String("/" + b + "/dst-copy")})
		must(t, err)
		got, _ := get(t, c, b, "dst-slash")
		wantBytes(t, got, data)
	})
	t.Run("MissingSource", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("dst-missing"), CopySource: copySrc(b, "nope")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})
	t.Run("OddKeys", func(t *testing.T) {
		for _, key := range []string{"sp ace+plus", "x%2Fy", "données/é.txt"} {
			put(t, c, b, key, []byte(key))
			_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("copy-of/" + key), CopySource: copySrc(b, key)})
			must(t, err)
			got, _ := get(t, c, b, "copy-of/"+key)
			if string(got) != key {
				t.Errorf("copy of %q holds %q", key, got)
			}
		}
	})
}

// oddKeys are keys that path cleaning, double decoding or normalization
// would corrupt; each must round-trip byte for byte.
func oddKeys() []string {
	long := "long/x" + strings.Repeat("é", 509) // exactly 1024 bytes
	return []string{
		"a/../b",
		"a/./b",
		"a//b",
		"x%2Fy",
		"pct%25done",
		"with space.txt",
		"plus+sign",
		"données/é.txt",
		"emoji/😀🚀.bin",
		"cafe\u0301", // NFD: must not be normalized to "café"
		"trailing/",
		"semi;colon,comma=eq&amp",
		"quote\"apos'",
		"tilde~star*paren()",
		"question?mark#hash",
		"[brackets]{braces}",
		"back\\slash",
		"tab\there",
		long,
	}
}

func TestKeys(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	mc := newMinio(t, srv)
	ctx := context.Background()
	const b = "keys"
	createBucket(t, c, b)
	if n := len(oddKeys()[len(oddKeys())-1]); n != 1024 {
		t.Fatalf("long key is %d bytes", n)
	}

	for _, key := range oddKeys() {
		t.Run(url.PathEscape(key[:min(len(key), 24)]), func(t *testing.T) {
			body := []byte("body of " + key)
			put(t, c, b, key, body)
			got, _ := get(t, c, b, key)
			wantBytes(t, got, body)
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String(key)})
			must(t, err)
			if len(out.Contents) == 0 || aws.ToString(out.Contents[0].Key) != key {
				t.Fatalf("LIST prefix %q = %+v", key, out.Contents)
			}
			obj, err := mc.GetObject(ctx, b, key, minio.GetObjectOptions{})
			must(t, err)
			mgot, err := io.ReadAll(obj)
			must(t, err)
			wantBytes(t, mgot, body)
		})
	}
	t.Run("ListAll", func(t *testing.T) {
		got := listAll(t, c, b, "")
		want := append([]string(nil), oddKeys()...)
		slices.Sort(want)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("LIST = %q\nwant %q", got, want)
		}
	})
	t.Run("Distinct", func(t *testing.T) {
		// "a/../b" is not "b", "a//b" is not "a/b", "x%2Fy" is not "x/y".
		for _, k := range []string{"b", "a/b", "x/y", "café"} {
			_, _, err := tryGet(c, b, k)
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		}
	})
	t.Run("TooLong", func(t *testing.T) {
		key := strings.Repeat("k", 1025)
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusBadRequest, "KeyTooLongError")
	})
	t.Run("NotUTF8", func(t *testing.T) {
		// A key that is not UTF-8 could not be listed faithfully in XML:
		// it is refused wherever a key is created, and reads answer as
		// for any key that does not exist.
		key := "bad\xffkey"
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String(key)})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String(key), CopySource: aws.String(b + "/a/../b")})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, _, err = tryGet(c, b, key)
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
		must(t, err)
	})
}

func TestVirtualHost(t *testing.T) {
	srv := nastest.Start(t, nastest.Options{Domains: []string{"localhost"}})
	_, port, _ := strings.Cut(srv.Addr, ":")
	endpoint := "http://localhost:" + port
	rec := &recorder{base: dialAll(srv.Addr).Transport}
	c := newS3(t, srv, clientOpts{endpoint: endpoint, vhost: true, httpClient: &http.Client{Transport: rec}, region: regionB})
	ctx := context.Background()
	const b = "vhost-bucket"
	createBucket(t, c, b)
	if h := rec.last(); h == nil || h.Get("Host") != b+".localhost:"+port {
		t.Fatalf("CreateBucket went to host %q, want %s.localhost:%s", h.Get("Host"), b, port)
	}

	keys := []string{"plain.txt", "dir/sub/file", "a/../b", "a//b", "x%2Fy", "with space", "données/é.txt"}
	for _, key := range keys {
		put(t, c, b, key, []byte(key))
		got, _ := get(t, c, b, key)
		if string(got) != key {
			t.Errorf("vhost GET %q = %q", key, got)
		}
	}
	got := listAll(t, c, b, "")
	want := append([]string(nil), keys...)
	slices.Sort(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("vhost LIST = %q, want %q", got, want)
	}
	_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
	must(t, err)

	// The same bucket by path style on the same server.
	pc := client(t, srv)
	pgot, _ := get(t, pc, b, "a//b")
	if string(pgot) != "a//b" {
		t.Errorf("path-style GET = %q", pgot)
	}

	// minio-go in DNS (virtual-host) lookup mode.
	mc := newMinioAt(t, "localhost:"+port, func(o *minio.Options) {
		o.BucketLookup = minio.BucketLookupDNS
		o.Transport = dialAll(srv.Addr).Transport
	})
	data := randBytes("vhost-minio", 70<<10)
	_, err = mc.PutObject(ctx, b, "minio/obj", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	must(t, err)
	obj, err := mc.GetObject(ctx, b, "minio/obj", minio.GetObjectOptions{})
	must(t, err)
	mgot, err := io.ReadAll(obj)
	must(t, err)
	wantBytes(t, mgot, data)
	n := 0
	for o := range mc.ListObjects(ctx, b, minio.ListObjectsOptions{Recursive: true}) {
		must(t, o.Err)
		n++
	}
	if n != len(keys)+1 {
		t.Errorf("minio vhost listing has %d objects, want %d", n, len(keys)+1)
	}
}
