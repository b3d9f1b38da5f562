package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/tags"

	"github.com/agentnas/nas/nastest"
)

// tagSet renders an SDK tag set as "k=v,k=v".
func tagSet(ts []types.Tag) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
	}
	return strings.Join(parts, ",")
}

func sdkTags(kv ...string) *types.Tagging {
	tg := &types.Tagging{TagSet: []types.Tag{}}
	for i := 0; i+1 < len(kv); i += 2 {
		tg.TagSet = append(tg.TagSet, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return tg
}

// objectTags reads the tag set of bucket/key (at vid, if set).
func objectTags(t *testing.T, c *s3.Client, bucket, key, vid string) (string, string) {
	t.Helper()
	in := &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if vid != "" {
		in.VersionId = aws.String(vid)
	}
	out, err := c.GetObjectTagging(context.Background(), in)
	must(t, err)
	return tagSet(out.TagSet), aws.ToString(out.VersionId)
}

func tagCount(t *testing.T, c *s3.Client, bucket, key string) int32 {
	t.Helper()
	out, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	must(t, err)
	return aws.ToInt32(out.TagCount)
}

func TestObjectTagging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "tags"
	createBucket(t, c, b)
	bk := aws.String(b)

	t.Run("PutHeaderAndCount", func(t *testing.T) {
		v := put(t, c, b, "k", []byte("body"), func(in *s3.PutObjectInput) { in.Tagging = aws.String("team=data&env=prod%201") })
		got, vid := objectTags(t, c, b, "k", "")
		if got != "env=prod 1,team=data" || vid != aws.ToString(v.VersionId) {
			t.Fatalf("tags %q at %s, want env,team at %s", got, vid, aws.ToString(v.VersionId))
		}
		if n := tagCount(t, c, b, "k"); n != 2 {
			t.Fatalf("x-amz-tagging-count %d, want 2", n)
		}
		if _, out := get(t, c, b, "k"); aws.ToInt32(out.TagCount) != 2 {
			t.Fatalf("GET tag count %d", aws.ToInt32(out.TagCount))
		}
		put(t, c, b, "plain", []byte("x"))
		if out, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: bk, Key: aws.String("plain")}); err != nil || out.TagCount != nil {
			t.Fatalf("untagged object: count %v, %v", out.TagCount, err)
		}
	})

	t.Run("RetagKeepsTheVersion", func(t *testing.T) {
		v := put(t, c, b, "r", []byte("bytes stay"))
		out, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String("r"), Tagging: sdkTags("a", "1")})
		must(t, err)
		if aws.ToString(out.VersionId) != aws.ToString(v.VersionId) {
			t.Fatalf("PutObjectTagging answered version %s, the object is %s", aws.ToString(out.VersionId), aws.ToString(v.VersionId))
		}
		got, o := get(t, c, b, "r", func(in *s3.GetObjectInput) { in.VersionId = v.VersionId })
		wantBytes(t, got, []byte("bytes stay"))
		if aws.ToInt32(o.TagCount) != 1 || aws.ToString(o.ETag) != aws.ToString(v.ETag) {
			t.Fatalf("version after retag: count %d etag %s", aws.ToInt32(o.TagCount), aws.ToString(o.ETag))
		}
		vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: bk, Prefix: aws.String("r")})
		must(t, err)
		if len(vs.Versions) != 1 {
			t.Fatalf("retagging made %d versions", len(vs.Versions))
		}
		del, err := c.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: bk, Key: aws.String("r")})
		must(t, err)
		if aws.ToString(del.VersionId) != aws.ToString(v.VersionId) {
			t.Fatalf("DeleteObjectTagging answered version %s", aws.ToString(del.VersionId))
		}
		if got, _ := objectTags(t, c, b, "r", ""); got != "" {
			t.Fatalf("tags after delete: %q", got)
		}
		if n := tagCount(t, c, b, "r"); n != 0 {
			t.Fatalf("count after delete: %d", n)
		}
	})

	t.Run("Limits", func(t *testing.T) {
		put(t, c, b, "lim", []byte("x"))
		var eleven []string
		for i := range 11 {
			eleven = append(eleven, fmt.Sprint("k", i), "v")
		}
		for name, tg := range map[string]*types.Tagging{
			"eleven":    sdkTags(eleven...),
			"duplicate": sdkTags("a", "1", "a", "2"),
			"aws":       sdkTags("aws:cloudformation", "x"),
			"long key":  sdkTags(strings.Repeat("k", 129), "v"),
			"long val":  sdkTags("k", strings.Repeat("v", 257)),
			"empty key": sdkTags("", "v"),
		} {
			_, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String("lim"), Tagging: tg})
			if errCode(err) != "InvalidTag" {
				t.Errorf("%s: %v, want InvalidTag", name, err)
			}
		}
		_, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String("lim"), Tagging: sdkTags(eleven[:20]...)})
		must(t, err)
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: aws.String("lim2"), Body: strings.NewReader("x"),
			Tagging: aws.String(strings.Repeat("k=v&", 1) + "k=w")})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String("missing"), Tagging: sdkTags("a", "1")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: bk, Key: aws.String("missing")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		req := rawRequest(t, http.MethodPut, srv.Endpoint+"/"+b+"/lim?tagging=", []byte("<Tagging><TagSet>"), time.Now(), owner, nil)
		if st, _, body := do(t, req); st != http.StatusBadRequest || xmlCode(body) != "MalformedXML" {
			t.Fatalf("malformed tagging: %d %s", st, body)
		}
	})

	t.Run("Copy", func(t *testing.T) {
		put(t, c, b, "src", []byte("copied"), func(in *s3.PutObjectInput) { in.Tagging = aws.String("origin=src") })
		cp := func(dst string, tune func(*s3.CopyObjectInput)) {
			in := &s3.CopyObjectInput{Bucket: bk, Key: aws.String(dst), CopySource: aws.String(b + "/src")}
			if tune != nil {
				tune(in)
			}
			_, err := c.CopyObject(ctx, in)
			must(t, err)
		}
		cp("dst-copy", nil)
		cp("dst-replace", func(in *s3.CopyObjectInput) {
			in.TaggingDirective, in.Tagging = types.TaggingDirectiveReplace, aws.String("fresh=1&more=2")
		})
		cp("dst-cleared", func(in *s3.CopyObjectInput) { in.TaggingDirective = types.TaggingDirectiveReplace })
		for key, want := range map[string]string{"dst-copy": "origin=src", "dst-replace": "fresh=1,more=2", "dst-cleared": ""} {
			if got, _ := objectTags(t, c, b, key, ""); got != want {
				t.Errorf("%s: tags %q, want %q", key, got, want)
			}
		}
	})

	t.Run("Multipart", func(t *testing.T) {
		key := aws.String("mp")
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bk, Key: key, Tagging: aws.String("stage=raw")})
		must(t, err)
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: key, UploadId: up.UploadId, PartNumber: aws.Int32(1),
			Body: bytes.NewReader([]byte("only part"))})
		must(t, err)
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bk, Key: key, UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: p.ETag, PartNumber: aws.Int32(1), ChecksumCRC32: p.ChecksumCRC32}}}})
		must(t, err)
		if got, _ := objectTags(t, c, b, "mp", ""); got != "stage=raw" {
			t.Fatalf("completed upload's tags %q", got)
		}
	})

	t.Run("Versions", func(t *testing.T) {
		oc := ownerCtl(t, srv)
		v1 := aws.ToString(put(t, c, b, "hist", []byte("one"), func(in *s3.PutObjectInput) { in.Tagging = aws.String("v=1") }).VersionId)
		oc.commit(b, "main", "v1")
		v2 := aws.ToString(put(t, c, b, "hist", []byte("two")).VersionId)
		_, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String("hist"), VersionId: aws.String(v1), Tagging: sdkTags("v", "x")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		if got, vid := objectTags(t, c, b, "hist", v1); got != "v=1" || vid != v1 {
			t.Fatalf("older version's tags %q at %s", got, vid)
		}
		out, err := c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String("hist"), VersionId: aws.String(v2), Tagging: sdkTags("v", "2")})
		must(t, err)
		if aws.ToString(out.VersionId) != v2 {
			t.Fatalf("tagged %s, want %s", aws.ToString(out.VersionId), v2)
		}
		if got, _ := objectTags(t, c, b, "hist", v2); got != "v=2" {
			t.Fatalf("current version's tags %q", got)
		}
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: bk, Key: aws.String("hist")})
		must(t, err)
		_, err = c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: bk, Key: aws.String("hist")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})

	t.Run("Minio", func(t *testing.T) {
		mc := newMinio(t, srv)
		_, err := mc.PutObject(ctx, b, "m", strings.NewReader("minio"), 5, minio.PutObjectOptions{UserTags: map[string]string{"by": "minio"}})
		must(t, err)
		st, err := mc.StatObject(ctx, b, "m", minio.StatObjectOptions{})
		must(t, err)
		if st.UserTagCount != 1 {
			t.Fatalf("minio UserTagCount %d", st.UserTagCount)
		}
		tg, err := tags.MapToObjectTags(map[string]string{"a": "1", "b": "2"})
		must(t, err)
		must(t, mc.PutObjectTagging(ctx, b, "m", tg, minio.PutObjectTaggingOptions{}))
		back, err := mc.GetObjectTagging(ctx, b, "m", minio.GetObjectTaggingOptions{})
		must(t, err)
		if m := back.ToMap(); len(m) != 2 || m["a"] != "1" || m["b"] != "2" {
			t.Fatalf("minio tags %v", m)
		}
		must(t, mc.RemoveObjectTagging(ctx, b, "m", minio.RemoveObjectTaggingOptions{}))
		back, err = mc.GetObjectTagging(ctx, b, "m", minio.GetObjectTaggingOptions{})
		must(t, err)
		if len(back.ToMap()) != 0 {
			t.Fatalf("minio tags after remove %v", back.ToMap())
		}
	})
}

func TestBucketTagging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	createBucket(t, c, "btags")
	bk := aws.String("btags")
	_, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: bk})
	wantErr(t, err, http.StatusNotFound, "NoSuchTagSet")
	_, err = c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: bk, Tagging: sdkTags("cost", "ml", "aa", "1")})
	must(t, err)
	out, err := c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: bk})
	must(t, err)
	if got := tagSet(out.TagSet); got != "aa=1,cost=ml" {
		t.Fatalf("bucket tags %q", got)
	}
	_, err = c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: bk, Tagging: sdkTags("aws:x", "1")})
	wantErr(t, err, http.StatusBadRequest, "InvalidTag")
	_, err = c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("no-such")})
	wantErr(t, err, http.StatusNotFound, "NoSuchBucket")

	mc := newMinio(t, srv)
	mt, err := mc.GetBucketTagging(ctx, "btags")
	must(t, err)
	if m := mt.ToMap(); m["cost"] != "ml" {
		t.Fatalf("minio bucket tags %v", m)
	}
	must(t, mc.RemoveBucketTagging(ctx, "btags"))
	_, err = c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: bk})
	wantErr(t, err, http.StatusNotFound, "NoSuchTagSet")

	// Deleting the bucket deletes its tags: a new bucket of the name has none.
	_, err = c.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: bk, Tagging: sdkTags("old", "1")})
	must(t, err)
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: bk})
	must(t, err)
	createBucket(t, c, "btags")
	_, err = c.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: bk})
	wantErr(t, err, http.StatusNotFound, "NoSuchTagSet")
}

// TestLeaseTagging: tagging goes through the one door like any write; a
// lease's tags stay on its branch.
func TestLeaseTagging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own, oc := client(t, srv), ownerCtl(t, srv)
	const repo = "ltags"
	createBucket(t, own, repo)
	for _, k := range []string{"work/a", "ref/r", "secret/s"} {
		put(t, own, repo, k, []byte(k))
	}
	oc.commit(repo, "main", "seed")
	li := oc.newLease(map[string]any{"repo": repo, "role": "tagger", "fork_from": "main", "ttl": "1h", "view": []map[string]any{
		{"path": "work/**", "actions": []string{"list", "read", "write"}},
		{"path": "ref/**", "actions": []string{"list", "read"}},
	}})
	lc := leaseS3(t, srv, li)
	bk := aws.String(repo)
	tagIt := func(key string) error {
		_, err := lc.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: bk, Key: aws.String(key), Tagging: sdkTags("run", "1")})
		return err
	}
	must(t, tagIt("work/a"))
	if got, _ := objectTags(t, lc, repo, "work/a", ""); got != "run=1" {
		t.Fatalf("lease reads its tags as %q", got)
	}
	if got, _ := objectTags(t, own, repo, "work/a", ""); got != "" {
		t.Fatalf("main sees the lease's tags %q", got)
	}
	wantErr(t, tagIt("ref/r"), http.StatusForbidden, "AccessDenied")
	_, err := lc.DeleteObjectTagging(ctx, &s3.DeleteObjectTaggingInput{Bucket: bk, Key: aws.String("ref/r")})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	if got, _ := objectTags(t, lc, repo, "ref/r", ""); got != "" {
		t.Fatalf("read-only key's tags %q", got)
	}
	wantErr(t, tagIt("secret/s"), http.StatusNotFound, "NoSuchKey")
	_, err = lc.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: bk, Key: aws.String("secret/s")})
	wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	_, err = lc.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: bk, Key: aws.String("secret/s"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesObjectSize}})
	wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	_, err = lc.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: bk, Tagging: sdkTags("a", "1")})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	_, err = lc.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: bk})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
}
