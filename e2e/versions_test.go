package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/nastest"
)

// commit commits the default branch of repo and returns the commit ID.
func commit(t testing.TB, srv *nastest.Server, repo, msg string) string {
	t.Helper()
	ctx := context.Background()
	r, err := srv.Gateway.Branches.GetRepo(ctx, repo)
	must(t, err)
	id, err := srv.Gateway.Branches.Commit(ctx, repo, r.DefaultBranch, branch.CommitOptions{Message: msg})
	must(t, err)
	return id.String()
}

var commitIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestVersions(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "history"
	createBucket(t, c, b)
	getVersion := func(key, vid string) ([]byte, *s3.GetObjectOutput, error) {
		return tryGet(c, b, key, func(in *s3.GetObjectInput) { in.VersionId = aws.String(vid) })
	}

	v1 := put(t, c, b, "doc", []byte("one"))
	v2 := put(t, c, b, "doc", []byte("two"))
	vid1, vid2 := aws.ToString(v1.VersionId), aws.ToString(v2.VersionId)

	t.Run("WritesReturnVersions", func(t *testing.T) {
		if vid1 == "" || vid2 == "" || vid1 == vid2 {
			t.Fatalf("version IDs %q %q: want two distinct", vid1, vid2)
		}
		put(t, c, b, "tmp", []byte("x"))
		del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("tmp")})
		must(t, err)
		if aws.ToString(del.VersionId) == "" || !aws.ToBool(del.DeleteMarker) {
			t.Errorf("DELETE: version %q delete marker %v", aws.ToString(del.VersionId), aws.ToBool(del.DeleteMarker))
		}
		// A delete marker addressed by version: 405 with the marker headers.
		_, _, err = getVersion("tmp", aws.ToString(del.VersionId))
		wantErr(t, err, http.StatusMethodNotAllowed, "MethodNotAllowed")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("tmp"), VersionId: del.VersionId})
		wantErr(t, err, http.StatusMethodNotAllowed, "")
	})
	t.Run("ReadOverwritten", func(t *testing.T) {
		got, out, err := getVersion("doc", vid1)
		must(t, err)
		if string(got) != "one" || aws.ToString(out.VersionId) != vid1 || aws.ToString(out.ETag) != etagOf([]byte("one")) {
			t.Errorf("GET v1 = %q version %q etag %s", got, aws.ToString(out.VersionId), aws.ToString(out.ETag))
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("doc"), VersionId: aws.String(vid1)})
		must(t, err)
		if aws.ToInt64(h.ContentLength) != 3 || aws.ToString(h.VersionId) != vid1 || aws.ToString(h.ETag) != etagOf([]byte("one")) {
			t.Errorf("HEAD v1: length %d version %q etag %s", aws.ToInt64(h.ContentLength), aws.ToString(h.VersionId), aws.ToString(h.ETag))
		}
		cur, out := get(t, c, b, "doc")
		if string(cur) != "two" || aws.ToString(out.VersionId) != vid2 {
			t.Errorf("current = %q version %q", cur, aws.ToString(out.VersionId))
		}
	})
	t.Run("BadVersions", func(t *testing.T) {
		_, _, err := getVersion("doc", "not-a-version")
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, _, err = getVersion("doc", strings.Repeat("ab", 32)) // a commit ID that does not exist
		wantErr(t, err, http.StatusNotFound, "NoSuchVersion")
		// A version of another key.
		_, _, err = getVersion("other-key", vid1)
		wantErr(t, err, http.StatusNotFound, "NoSuchVersion")
	})

	// Commit, then keep writing: history stays readable.
	c1 := commit(t, srv, b, "first")
	v3 := put(t, c, b, "doc", []byte("three"))
	put(t, c, b, "later", []byte("after c1"))
	c2 := commit(t, srv, b, "second")

	t.Run("AfterCommit", func(t *testing.T) {
		for vid, want := range map[string]string{vid1: "one", vid2: "two", aws.ToString(v3.VersionId): "three"} {
			got, _, err := getVersion("doc", vid)
			must(t, err)
			if string(got) != want {
				t.Errorf("version %s = %q, want %q", vid, got, want)
			}
		}
	})
	t.Run("CommitIDAsVersion", func(t *testing.T) {
		if !commitIDPattern.MatchString(c1) {
			t.Fatalf("commit ID %q is not 64 hex digits", c1)
		}
		for _, tc := range []struct{ commit, key, want string }{{c1, "doc", "two"}, {c2, "doc", "three"}, {c2, "later", "after c1"}} {
			got, _, err := getVersion(tc.key, tc.commit)
			must(t, err)
			if string(got) != tc.want {
				t.Errorf("%s as of %s = %q, want %q", tc.key, tc.commit[:8], got, tc.want)
			}
		}
		h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String("doc"), VersionId: aws.String(c1)})
		must(t, err)
		if aws.ToInt64(h.ContentLength) != 3 {
			t.Errorf("HEAD doc as of c1: length %d", aws.ToInt64(h.ContentLength))
		}
		// "later" did not exist at c1.
		_, _, err = getVersion("later", c1)
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		// minio-go passes the commit as versionId too.
		mc := newMinio(t, srv)
		obj, err := mc.GetObject(ctx, b, "doc", minio.GetObjectOptions{VersionID: c1})
		must(t, err)
		mgot, err := io.ReadAll(obj)
		must(t, err)
		if string(mgot) != "two" {
			t.Errorf("minio doc as of c1 = %q", mgot)
		}
	})
	t.Run("CopyFromVersion", func(t *testing.T) {
		for _, vid := range []string{vid1, c1} {
			out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(b), Key: aws.String("restored"),
				CopySource: aws.String(b + "/doc?versionId=" + url.QueryEscape(vid))})
			must(t, err)
			got, _ := get(t, c, b, "restored")
			want := map[string]string{vid1: "one", c1: "two"}[vid]
			if string(got) != want {
				t.Errorf("copy of doc@%s = %q, want %q", vid, got, want)
			}
			if vid == vid1 && aws.ToString(out.CopySourceVersionId) != vid1 {
				t.Errorf("CopySourceVersionId = %q", aws.ToString(out.CopySourceVersionId))
			}
		}
	})
	t.Run("ListObjectVersions", func(t *testing.T) {
		put(t, c, b, "lv", []byte("a"))
		put(t, c, b, "lv", []byte("bb"))
		del, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("lv")})
		must(t, err)
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b), Prefix: aws.String("lv")})
		must(t, err)
		if len(out.Versions) != 2 || len(out.DeleteMarkers) != 1 {
			t.Fatalf("versions %d delete markers %d, want 2 and 1", len(out.Versions), len(out.DeleteMarkers))
		}
		dm := out.DeleteMarkers[0]
		if aws.ToString(dm.VersionId) != aws.ToString(del.VersionId) || !aws.ToBool(dm.IsLatest) || aws.ToString(dm.Key) != "lv" {
			t.Errorf("delete marker %+v", dm)
		}
		// Newest first: "bb" then "a", neither latest.
		if aws.ToInt64(out.Versions[0].Size) != 2 || aws.ToInt64(out.Versions[1].Size) != 1 {
			t.Errorf("version sizes %d, %d: want newest first", aws.ToInt64(out.Versions[0].Size), aws.ToInt64(out.Versions[1].Size))
		}
		for _, v := range out.Versions {
			if aws.ToBool(v.IsLatest) || aws.ToString(v.VersionId) == "" || aws.ToString(v.ETag) == "" {
				t.Errorf("version %+v", v)
			}
		}
		// All of doc's versions, committed or not, with exactly one latest.
		out, err = c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b), Prefix: aws.String("doc")})
		must(t, err)
		latest := 0
		var vids []string
		for _, v := range out.Versions {
			vids = append(vids, aws.ToString(v.VersionId))
			if aws.ToBool(v.IsLatest) {
				latest++
				if aws.ToString(v.VersionId) != aws.ToString(v3.VersionId) {
					t.Errorf("latest doc version %s, want %s", aws.ToString(v.VersionId), aws.ToString(v3.VersionId))
				}
			}
		}
		if latest != 1 || len(vids) != 3 || vids[2] != vid1 || vids[1] != vid2 {
			t.Errorf("doc versions %v (latest %d), want [v3 v2 v1]", vids, latest)
		}
	})
	t.Run("ListObjectVersionsPagination", func(t *testing.T) {
		var all []string
		in := &s3.ListObjectVersionsInput{Bucket: aws.String(b), MaxKeys: aws.Int32(2)}
		for i := 0; ; i++ {
			out, err := c.ListObjectVersions(ctx, in)
			must(t, err)
			if len(out.Versions)+len(out.DeleteMarkers) > 2 {
				t.Fatalf("page of %d entries", len(out.Versions)+len(out.DeleteMarkers))
			}
			for _, v := range out.Versions {
				all = append(all, aws.ToString(v.Key)+"@"+aws.ToString(v.VersionId))
			}
			for _, m := range out.DeleteMarkers {
				all = append(all, aws.ToString(m.Key)+"@"+aws.ToString(m.VersionId))
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			if i > 50 {
				t.Fatal("pagination does not end")
			}
			in.KeyMarker, in.VersionIdMarker = out.NextKeyMarker, out.NextVersionIdMarker
		}
		full, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
		must(t, err)
		if n := len(full.Versions) + len(full.DeleteMarkers); n != len(all) {
			t.Errorf("paged %d entries, unpaged %d", len(all), n)
		}
		seen := map[string]bool{}
		for _, e := range all {
			if seen[e] {
				t.Errorf("entry %s listed twice", e)
			}
			seen[e] = true
		}
	})
}

// purge empties a bucket as boto3's bucket.object_versions.delete() and
// rclone purge do: list every version and delete marker, delete them by
// version ID in batches, and return the per-key errors.
func purge(t testing.TB, c *s3.Client, bucket string) []types.Error {
	t.Helper()
	ctx := context.Background()
	var errs []types.Error
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	var ids []types.ObjectIdentifier
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		must(t, err)
		for _, v := range out.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range out.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids[:n], Quiet: aws.Bool(true)}})
		must(t, err)
		errs = append(errs, out.Errors...)
		ids = ids[n:]
	}
	return errs
}

func TestPurgeBucket(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()

	t.Run("Uncommitted", func(t *testing.T) {
		const b = "purge-staged"
		createBucket(t, c, b)
		for _, k := range []string{"a", "a", "b/c", "d"} {
			put(t, c, b, k, []byte(k))
		}
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("d")})
		must(t, err)
		if errs := purge(t, c, b); len(errs) != 0 {
			t.Errorf("purge errors: %+v", errs)
		}
		if keys := listAll(t, c, b, ""); len(keys) != 0 {
			t.Fatalf("after purge the bucket lists %v", keys)
		}
		// Staged history is forgotten as S3 forgets deleted versions:
		// no version and no delete marker is left behind.
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
		must(t, err)
		if len(out.Versions) != 0 || len(out.DeleteMarkers) != 0 {
			t.Fatalf("after purge: %d versions, %d delete markers", len(out.Versions), len(out.DeleteMarkers))
		}
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		must(t, err)
	})
	t.Run("MarkersStackAndUnstack", func(t *testing.T) {
		const b = "markers"
		createBucket(t, c, b)
		v1 := put(t, c, b, "k", []byte("one"))
		var markers []string
		for range 3 {
			d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
			must(t, err)
			markers = append(markers, aws.ToString(d.VersionId))
		}
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b)})
		must(t, err)
		if len(out.DeleteMarkers) != 3 || len(out.Versions) != 1 {
			t.Fatalf("stacked: %d markers, %d versions", len(out.DeleteMarkers), len(out.Versions))
		}
		// Deleting the markers, newest first, brings the version back.
		for i := len(markers) - 1; i >= 0; i-- {
			d, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(markers[i])})
			must(t, err)
			if !aws.ToBool(d.DeleteMarker) || aws.ToString(d.VersionId) != markers[i] {
				t.Errorf("delete of marker %s answered marker=%v version %q", markers[i], aws.ToBool(d.DeleteMarker), aws.ToString(d.VersionId))
			}
		}
		got, o := get(t, c, b, "k")
		wantBytes(t, got, []byte("one"))
		if aws.ToString(o.VersionId) != aws.ToString(v1.VersionId) {
			t.Errorf("undeleted version %q, want %q", aws.ToString(o.VersionId), aws.ToString(v1.VersionId))
		}
	})
	t.Run("Committed", func(t *testing.T) {
		const b = "purge-history"
		createBucket(t, c, b)
		put(t, c, b, "a", []byte("a1"))
		put(t, c, b, "keep/x", []byte("x1"))
		commit(t, srv, b, "c1")
		put(t, c, b, "a", []byte("a2")) // a1 is now an older committed version
		put(t, c, b, "new", []byte("n"))
		commit(t, srv, b, "c2")
		put(t, c, b, "a", []byte("a3")) // staged on top
		errs := purge(t, c, b)
		// Only older committed versions may be refused, each as AccessDenied.
		for _, e := range errs {
			if aws.ToString(e.Code) != "AccessDenied" || aws.ToString(e.Key) != "a" {
				t.Errorf("purge error %s %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
			}
		}
		if len(errs) == 0 {
			t.Error("purge deleted committed history without complaint")
		}
		if keys := listAll(t, c, b, ""); len(keys) != 0 {
			t.Fatalf("after purge the bucket lists %v", keys)
		}
		_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		must(t, err)
		_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b)})
		wantErr(t, err, http.StatusNotFound, "")
	})
	t.Run("DeleteOlderCommittedVersion", func(t *testing.T) {
		const b = "immutable"
		createBucket(t, c, b)
		old := put(t, c, b, "k", []byte("old"))
		commit(t, srv, b, "c1")
		cur := put(t, c, b, "k", []byte("new"))
		c2 := commit(t, srv, b, "c2")
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: old.VersionId})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: aws.String(c2)})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		// The old version is still there.
		got, _, err := tryGet(c, b, "k", func(in *s3.GetObjectInput) { in.VersionId = old.VersionId })
		must(t, err)
		if string(got) != "old" {
			t.Errorf("old version = %q", got)
		}
		// Deleting the current version by ID removes the key.
		out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: cur.VersionId})
		must(t, err)
		if aws.ToString(out.VersionId) != aws.ToString(cur.VersionId) {
			t.Errorf("DELETE ?versionId echoed %q, want %q", aws.ToString(out.VersionId), aws.ToString(cur.VersionId))
		}
		_, _, err = tryGet(c, b, "k")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		must(t, err)
	})
	t.Run("DeleteUncommittedOldVersion", func(t *testing.T) {
		const b = "forgettable"
		createBucket(t, c, b)
		old := put(t, c, b, "k", []byte("old"))
		put(t, c, b, "k", []byte("new"))
		_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("k"), VersionId: old.VersionId})
		must(t, err)
		_, _, err = tryGet(c, b, "k", func(in *s3.GetObjectInput) { in.VersionId = old.VersionId })
		wantErr(t, err, http.StatusNotFound, "NoSuchVersion")
		got, _ := get(t, c, b, "k")
		if string(got) != "new" {
			t.Errorf("current = %q after deleting an older version", got)
		}
	})
}
