package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/nastest"
)

// view is one way of addressing a branch over S3: a client and the bucket
// name to give it.
type view struct {
	name   string
	c      *s3.Client
	bucket string
}

func TestBranches(t *testing.T) {
	srv := nastest.Start(t)
	ctx := context.Background()
	c := client(t, srv)
	const repo, fork = "data", "exp/run-1"
	createBucket(t, c, repo)
	put(t, c, repo, "shared", []byte("main v1"))
	put(t, c, repo, "dir/a", []byte("main a"))
	commit(t, srv, repo, "base")
	put(t, c, repo, "staged-on-main", []byte("not committed")) // not part of the fork
	if _, err := srv.Gateway.Branches.CreateBranch(ctx, repo, fork, "main"); err != nil {
		t.Fatal(err)
	}
	put(t, c, repo, "main-after-fork", []byte("later"))
	commit(t, srv, repo, "after fork")

	rec := &recorder{base: http.DefaultTransport}
	header := view{"header", newS3(t, srv, clientOpts{httpClient: &http.Client{Transport: rec}, s3Opts: []func(*s3.Options){onBranch(fork)}}), repo}
	alias := view{"alias", c, "data_exp_run-1"}
	mainKeys := func(t *testing.T) []string { return listAll(t, c, repo, "") }

	t.Run("HeaderIsSigned", func(t *testing.T) {
		_, err := header.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(repo)})
		must(t, err)
		h := rec.last()
		if h.Get("X-Nas-Branch") != fork || !slices.Contains(signedHeaders(h.Get("Authorization")), "x-nas-branch") {
			t.Fatalf("x-nas-branch %q, SignedHeaders %v", h.Get("X-Nas-Branch"), signedHeaders(h.Get("Authorization")))
		}
	})
	t.Run("ForkSeesCommittedStateAtForkTime", func(t *testing.T) {
		for _, v := range []view{header, alias} {
			if got := listAll(t, v.c, v.bucket, ""); !slices.Equal(got, []string{"dir/a", "shared"}) {
				t.Errorf("%s: fork lists %v, want [dir/a shared]", v.name, got)
			}
			got, _ := get(t, v.c, v.bucket, "shared")
			if string(got) != "main v1" {
				t.Errorf("%s: shared = %q", v.name, got)
			}
			for _, k := range []string{"staged-on-main", "main-after-fork"} {
				_, _, err := tryGet(v.c, v.bucket, k)
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			}
		}
	})
	t.Run("Isolation", func(t *testing.T) {
		for _, v := range []view{header, alias} {
			key := "fork-only-" + v.name
			out := put(t, v.c, v.bucket, key, []byte(v.name))
			if aws.ToString(out.VersionId) == "" {
				t.Errorf("%s: PUT without version", v.name)
			}
			got, _ := get(t, v.c, v.bucket, key)
			if string(got) != v.name {
				t.Errorf("%s: read back %q", v.name, got)
			}
			_, _, err := tryGet(c, repo, key)
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		}
		// Each form sees the other's writes: they address the same branch.
		for _, pair := range [][2]view{{header, alias}, {alias, header}} {
			got, _ := get(t, pair[0].c, pair[0].bucket, "fork-only-"+pair[1].name)
			if string(got) != pair[1].name {
				t.Errorf("%s reads %s's write as %q", pair[0].name, pair[1].name, got)
			}
		}
		put(t, header.c, repo, "shared", []byte("fork v2"))
		got, _ := get(t, c, repo, "shared")
		if string(got) != "main v1" {
			t.Errorf("main's shared became %q after a fork write", got)
		}
		put(t, c, repo, "main-only", []byte("m"))
		_, _, err := tryGet(alias.c, alias.bucket, "main-only")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		if keys := mainKeys(t); slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "fork-only") }) {
			t.Errorf("main lists fork writes: %v", keys)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		_, err := header.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("dir/a")})
		must(t, err)
		_, err = alias.c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(alias.bucket), Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: aws.String("fork-only-alias")}}}})
		must(t, err)
		for _, v := range []view{header, alias} {
			if got := listAll(t, v.c, v.bucket, ""); !slices.Equal(got, []string{"fork-only-header", "shared"}) {
				t.Errorf("%s: fork lists %v after deletes", v.name, got)
			}
		}
		got, _ := get(t, c, repo, "dir/a")
		if string(got) != "main a" {
			t.Errorf("main's dir/a = %q after the fork deleted it", got)
		}
	})
	t.Run("ListVariants", func(t *testing.T) {
		for _, v := range []view{header, alias} {
			out, err := v.c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(v.bucket)})
			must(t, err)
			if got := v1Page(out).keys; !slices.Equal(got, []string{"fork-only-header", "shared"}) {
				t.Errorf("%s: V1 lists %v", v.name, got)
			}
			vs, err := v.c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(v.bucket), Prefix: aws.String("shared")})
			must(t, err)
			if len(vs.Versions) != 2 {
				t.Errorf("%s: shared has %d versions on the fork, want 2 (main's v1 and the fork's v2)", v.name, len(vs.Versions))
			}
		}
	})
	t.Run("Multipart", func(t *testing.T) {
		p1, p2 := randBytes("bp1", 5*mib), randBytes("bp2", 10)
		for _, v := range []view{header, alias} {
			key := "mpu-" + v.name
			m := createMPU(t, v.c, v.bucket, key)
			m.part(1, p1)
			m.part(2, p2)
			// The upload is bound to the fork: main does not see it.
			_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(repo), Key: aws.String(key), UploadId: aws.String(m.id),
				PartNumber: aws.Int32(3), Body: bytes.NewReader(p2)})
			wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
			up, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(repo)})
			must(t, err)
			if len(up.Uploads) != 0 {
				t.Errorf("main lists the fork's uploads: %+v", up.Uploads)
			}
			up, err = v.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(v.bucket)})
			must(t, err)
			if len(up.Uploads) != 1 || aws.ToString(up.Uploads[0].UploadId) != m.id {
				t.Errorf("%s: fork lists uploads %+v", v.name, up.Uploads)
			}
			m.complete()
			got, _ := get(t, v.c, v.bucket, key)
			wantBytes(t, got, slices.Concat(p1, p2))
			_, _, err = tryGet(c, repo, key)
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		}
	})
	t.Run("CopyAcrossBranches", func(t *testing.T) {
		// The source bucket names the branch: copy main's object onto the fork.
		_, err := header.c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("from-main"),
			CopySource: aws.String("data_main/main-only")})
		must(t, err)
		got, _ := get(t, alias.c, alias.bucket, "from-main")
		if string(got) != "m" {
			t.Errorf("copied from main: %q", got)
		}
		// Without an alias the source is read from the destination's branch.
		_, err = header.c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("x"), CopySource: aws.String(repo + "/main-only")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})
	t.Run("Minio", func(t *testing.T) {
		mc := newMinio(t, srv)
		_, err := mc.PutObject(ctx, alias.bucket, "via-minio", strings.NewReader("m"), 1, minio.PutObjectOptions{})
		must(t, err)
		got, _ := get(t, header.c, repo, "via-minio")
		if string(got) != "m" {
			t.Errorf("minio write on the alias reads %q through the header", got)
		}
	})
	t.Run("UnsignedHeader", func(t *testing.T) {
		// x-nas-branch added after signing must be refused, not ignored:
		// like every x-amz-*/x-nas-* header the signature does not cover.
		inj := newS3(t, srv, clientOpts{httpClient: &http.Client{Transport: headerInjector{base: http.DefaultTransport,
			h: http.Header{"X-Nas-Branch": {fork}}}}})
		_, _, err := tryGet(inj, repo, "shared")
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, err = inj.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("sneaky"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		for _, v := range []view{{"main", c, repo}, header} {
			_, _, err := tryGet(v.c, v.bucket, "sneaky")
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		}
		// A presigned URL cannot be pointed at another branch either.
		pg, err := s3.NewPresignClient(c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("shared")})
		must(t, err)
		req, err := http.NewRequest(http.MethodGet, pg.URL, nil)
		must(t, err)
		req.Header.Set("x-nas-branch", fork)
		status, _, body := do(t, req)
		if status != http.StatusForbidden || xmlCode(body) != "AccessDenied" {
			t.Errorf("presigned URL with an added x-nas-branch: %d %s", status, body)
		}
	})
	t.Run("PresignedWithBranch", func(t *testing.T) {
		// A presigned URL made by a client on the fork signs x-nas-branch:
		// the holder must send it, and cannot drop or change it.
		pg, err := s3.NewPresignClient(header.c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("shared")})
		must(t, err)
		hv, _ := get(t, header.c, repo, "shared")
		av, _ := get(t, alias.c, alias.bucket, "shared")
		t.Logf("header %q alias %q", hv, av)
		if pg.SignedHeader.Get("X-Nas-Branch") != fork {
			t.Fatalf("presigned request does not sign x-nas-branch: %v", pg.SignedHeader)
		}
		for _, tc := range []struct {
			branch string
			status int
			body   string
		}{{fork, 200, "fork v2"}, {"", 403, ""}, {"main", 403, ""}} {
			req, err := http.NewRequest(http.MethodGet, pg.URL, nil)
			must(t, err)
			if tc.branch != "" {
				req.Header.Set("x-nas-branch", tc.branch)
			}
			status, _, body := do(t, req)
			if status != tc.status || (tc.status == 200 && string(body) != tc.body) {
				t.Errorf("presigned GET with x-nas-branch %q: %d %s", tc.branch, status, body)
			}
		}
	})
	t.Run("BadAddressing", func(t *testing.T) {
		_, _, err := tryGet(newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("main")}}), alias.bucket, "shared")
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument") // alias and header disagree
		_, _, err = tryGet(newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("Bad Name")}}), repo, "shared")
		wantErr(t, err, http.StatusBadRequest, "")
		_, _, err = tryGet(c, "data_no_such_branch", "shared")
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("nope")}}).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(repo)})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("data_new_branch")})
		wantErr(t, err, http.StatusBadRequest, "InvalidBucketName")
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(alias.bucket)})
		wantErr(t, err, http.StatusMethodNotAllowed, "MethodNotAllowed")
		out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		must(t, err)
		for _, bk := range out.Buckets {
			if strings.Contains(aws.ToString(bk.Name), "_") {
				t.Errorf("ListBuckets lists alias %q", aws.ToString(bk.Name))
			}
		}
	})
	t.Run("UnderscoreInBranch", func(t *testing.T) {
		// '_' in a branch is written "__" in its alias.
		if _, err := srv.Gateway.Branches.CreateBranch(ctx, repo, "feat_x/y", "main"); err != nil {
			t.Fatal(err)
		}
		put(t, c, "data_feat__x_y", "k", []byte("underscore"))
		got, _ := get(t, newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("feat_x/y")}}), repo, "k")
		if string(got) != "underscore" {
			t.Errorf("feat_x/y via header reads %q", got)
		}
	})
}

func TestProtectedBranch(t *testing.T) {
	srv := nastest.Start(t)
	ctx := context.Background()
	c := client(t, srv)
	const b = "guarded"
	createBucket(t, c, b)
	put(t, c, b, "keep", []byte("precious"))
	put(t, c, b, "other", []byte("o"))
	commit(t, srv, b, "seed")
	// An upload opened before protection must not complete after it.
	pending := createMPU(t, c, b, "late-upload")
	pending.part(1, []byte("late"))
	must(t, srv.Gateway.Branches.SetProtected(ctx, b, "main", true))

	denied := func(t *testing.T, err error) {
		t.Helper()
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
	}
	t.Run("Put", func(t *testing.T) {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("keep"), Body: strings.NewReader("overwrite")})
		denied(t, err)
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("new"), Body: strings.NewReader("new")})
		denied(t, err)
		mc := newMinio(t, srv)
		_, err = mc.PutObject(ctx, b, "new", bytes.NewReader(make([]byte, 100<<10)), 100<<10, minio.PutObjectOptions{})
		wantMinioErr(t, err, http.StatusForbidden, "AccessDenied")
	})
	t.Run("Delete", func(t *testing.T) {
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("keep")})
		denied(t, err)
	})
	t.Run("Copy", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("copy"), CopySource: aws.String(b + "/keep")})
		denied(t, err)
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("keep"), CopySource: aws.String(b + "/keep"),
			MetadataDirective: types.MetadataDirectiveReplace})
		denied(t, err)
	})
	t.Run("DeleteObjects", func(t *testing.T) {
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b), Delete: &types.Delete{
			Objects: []types.ObjectIdentifier{{Key: aws.String("keep")}, {Key: aws.String("other")}}}})
		if err != nil {
			denied(t, err) // refusing the whole request is fine too
			return
		}
		if len(out.Deleted) != 0 || len(out.Errors) != 2 {
			t.Fatalf("DeleteObjects on a protected branch: deleted %d, errors %d", len(out.Deleted), len(out.Errors))
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) != "AccessDenied" {
				t.Errorf("per-key error %s: %s", aws.ToString(e.Key), aws.ToString(e.Code))
			}
		}
	})
	t.Run("Multipart", func(t *testing.T) {
		_, err := pending.tryComplete(pending.parts)
		denied(t, err)
		_, err = c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("mpu")})
		denied(t, err)
	})
	t.Run("ReadsStillWork", func(t *testing.T) {
		got, _ := get(t, c, b, "keep")
		if string(got) != "precious" {
			t.Errorf("keep = %q", got)
		}
		if keys := listAll(t, c, b, ""); !slices.Equal(keys, []string{"keep", "other"}) {
			t.Errorf("protected branch lists %v", keys)
		}
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("other")})
		must(t, err)
		_, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
		must(t, err)
		obj, err := newMinio(t, srv).GetObject(ctx, b, "keep", minio.GetObjectOptions{})
		must(t, err)
		mgot, err := io.ReadAll(obj)
		must(t, err)
		if string(mgot) != "precious" {
			t.Errorf("minio reads %q", mgot)
		}
	})
	t.Run("ForkOfProtectedIsWritable", func(t *testing.T) {
		_, err := srv.Gateway.Branches.CreateBranch(ctx, b, "work", "main")
		must(t, err)
		put(t, c, "guarded_work", "keep", []byte("edited on a fork"))
		got, _ := get(t, c, b, "keep")
		if string(got) != "precious" {
			t.Errorf("main's keep = %q", got)
		}
		// Protecting the fork closes it too, whichever way it is addressed.
		must(t, srv.Gateway.Branches.SetProtected(ctx, b, "work", true))
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("guarded_work"), Key: aws.String("k"), Body: strings.NewReader("x")})
		denied(t, err)
		_, err = newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("work")}}).PutObject(ctx,
			&s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("k"), Body: strings.NewReader("x")})
		denied(t, err)
	})
	t.Run("ProtectedAtCreation", func(t *testing.T) {
		_, err := srv.Gateway.Branches.CreateRepo(ctx, "vault", branch.CreateRepoOptions{Protected: true})
		must(t, err)
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vault"), Key: aws.String("k"), Body: strings.NewReader("x")})
		denied(t, err)
		if keys := listAll(t, c, "vault", ""); len(keys) != 0 {
			t.Errorf("vault lists %v", keys)
		}
	})
	t.Run("Unprotect", func(t *testing.T) {
		must(t, srv.Gateway.Branches.SetProtected(ctx, b, "main", false))
		put(t, c, b, "after", []byte("writable again"))
		// Nothing the refused requests sent was kept.
		if keys := listAll(t, c, b, ""); !slices.Equal(keys, []string{"after", "keep", "other"}) {
			t.Errorf("after unprotect lists %v", keys)
		}
	})
}
