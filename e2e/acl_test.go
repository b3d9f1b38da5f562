package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/nastest"
)

const allUsers = "http://acs.amazonaws.com/groups/global/AllUsers"

// ownerID is the owner's canonical ID, as the README documents it.
func ownerID() string {
	sum := sha256.Sum256([]byte("agentnas owner " + nastest.AccessKey))
	return hex.EncodeToString(sum[:])
}

// grantList renders grants as "who:PERM,...", the owner as "owner".
func grantList(t *testing.T, o *types.Owner, gs []types.Grant) string {
	t.Helper()
	if aws.ToString(o.ID) != ownerID() || aws.ToString(o.DisplayName) != "owner" {
		t.Fatalf("Owner %s/%s, want %s/owner", aws.ToString(o.ID), aws.ToString(o.DisplayName), ownerID())
	}
	var out []string
	for _, g := range gs {
		who := aws.ToString(g.Grantee.URI)
		if g.Grantee.Type == types.TypeCanonicalUser {
			who = aws.ToString(g.Grantee.ID)
			if who == ownerID() && aws.ToString(g.Grantee.DisplayName) == "owner" {
				who = "owner"
			}
		}
		out = append(out, strings.TrimPrefix(who, "http://acs.amazonaws.com/groups/global/")+":"+string(g.Permission))
	}
	return strings.Join(out, ",")
}

func objectACL(t *testing.T, c *s3.Client, b, k, vid string) string {
	t.Helper()
	in := &s3.GetObjectAclInput{Bucket: aws.String(b), Key: aws.String(k)}
	if vid != "" {
		in.VersionId = aws.String(vid)
	}
	out, err := c.GetObjectAcl(context.Background(), in)
	must(t, err)
	return grantList(t, out.Owner, out.Grants)
}

func bucketACL(t *testing.T, c *s3.Client, b string) string {
	t.Helper()
	out, err := c.GetBucketAcl(context.Background(), &s3.GetBucketAclInput{Bucket: aws.String(b)})
	must(t, err)
	return grantList(t, out.Owner, out.Grants)
}

func TestObjectACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "acls"
	createBucket(t, c, b)
	bk := aws.String(b)
	put(t, c, b, "plain", []byte("x"))

	t.Run("DefaultIsPrivate", func(t *testing.T) {
		if got := objectACL(t, c, b, "plain", ""); got != "owner:FULL_CONTROL" {
			t.Fatalf("ACL %s", got)
		}
	})
	t.Run("CannedOnPut", func(t *testing.T) {
		put(t, c, b, "pub", []byte("x"), func(in *s3.PutObjectInput) { in.ACL = types.ObjectCannedACLPublicReadWrite })
		if got := objectACL(t, c, b, "pub", ""); got != "owner:FULL_CONTROL,AllUsers:READ,AllUsers:WRITE" {
			t.Fatalf("ACL %s", got)
		}
	})
	t.Run("GrantsAndVersions", func(t *testing.T) {
		v1 := put(t, c, b, "v", []byte("1"))
		_, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: aws.String("v"),
			GrantRead: aws.String(`uri="` + allUsers + `"`), GrantFullControl: aws.String(`id="` + ownerID() + `"`)})
		must(t, err)
		want := "owner:FULL_CONTROL,AllUsers:READ"
		if got := objectACL(t, c, b, "v", aws.ToString(v1.VersionId)); got != want {
			t.Fatalf("ACL of v1 %s, want %s", got, want)
		}
		v2 := put(t, c, b, "v", []byte("2"))
		if got := objectACL(t, c, b, "v", ""); got != "owner:FULL_CONTROL" {
			t.Fatalf("a new version starts private: %s", got)
		}
		if got := objectACL(t, c, b, "v", aws.ToString(v1.VersionId)); got != want {
			t.Fatalf("v1 kept %s", got)
		}
		// An AccessControlPolicy body, as GET gives it, puts back.
		out, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: bk, Key: aws.String("v"), VersionId: v1.VersionId})
		must(t, err)
		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: aws.String("v"), VersionId: v2.VersionId,
			AccessControlPolicy: &types.AccessControlPolicy{Owner: out.Owner, Grants: out.Grants}})
		must(t, err)
		if got := objectACL(t, c, b, "v", ""); got != want {
			t.Fatalf("body ACL %s", got)
		}
		if _, b2 := get(t, c, b, "v"); aws.ToString(b2.VersionId) != aws.ToString(v2.VersionId) {
			t.Fatalf("PutObjectAcl made a new version %s", aws.ToString(b2.VersionId))
		}
	})
	t.Run("HistoryIsImmutable", func(t *testing.T) {
		v1 := put(t, c, b, "h", []byte("1"))
		ownerCtl(t, srv).commit(b, "main", "acl history")
		put(t, c, b, "h", []byte("2"))
		_, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: aws.String("h"), VersionId: v1.VersionId, ACL: types.ObjectCannedACLPublicRead})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
	})
	t.Run("CopyGetsTheRequestACL", func(t *testing.T) {
		_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bk, Key: aws.String("copy"), CopySource: aws.String(b + "/pub")})
		must(t, err)
		if got := objectACL(t, c, b, "copy", ""); got != "owner:FULL_CONTROL" {
			t.Fatalf("copy took the source's ACL: %s", got)
		}
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: bk, Key: aws.String("copy"), CopySource: aws.String(b + "/plain"), ACL: types.ObjectCannedACLAuthenticatedRead})
		must(t, err)
		if got := objectACL(t, c, b, "copy", ""); got != "owner:FULL_CONTROL,AuthenticatedUsers:READ" {
			t.Fatalf("copy ACL %s", got)
		}
	})
	t.Run("Multipart", func(t *testing.T) {
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: bk, Key: aws.String("mp"), ACL: types.ObjectCannedACLPublicRead})
		must(t, err)
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: bk, Key: aws.String("mp"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
		must(t, err)
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: bk, Key: aws.String("mp"), UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: p.ETag, PartNumber: aws.Int32(1)}}}})
		must(t, err)
		if got := objectACL(t, c, b, "mp", ""); got != "owner:FULL_CONTROL,AllUsers:READ" {
			t.Fatalf("completed upload ACL %s", got)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		k := aws.String("plain")
		_, err := c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: k, ACL: "no-such-canned"})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: k, GrantRead: aws.String(`id="someone-else"`)})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: k, GrantRead: aws.String(`emailAddress="a@example.com"`)})
		wantErr(t, err, http.StatusBadRequest, "UnresolvableGrantByEmailAddress")
		pol := &types.AccessControlPolicy{Owner: &types.Owner{ID: aws.String("not-the-owner")}}
		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: k, AccessControlPolicy: pol})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		pol.Owner.ID = aws.String(ownerID())
		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: k, AccessControlPolicy: pol, ACL: types.ObjectCannedACLPrivate})
		wantErr(t, err, http.StatusBadRequest, "InvalidRequest")
		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: aws.String("missing"), ACL: types.ObjectCannedACLPrivate})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: aws.String("bad"), Body: strings.NewReader("x"), ACL: "bogus"})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		if got := objectACL(t, c, b, "plain", ""); got != "owner:FULL_CONTROL" {
			t.Fatalf("a refused ACL changed the object: %s", got)
		}
	})
	t.Run("Minio", func(t *testing.T) {
		mc := newMinio(t, srv)
		info, err := mc.GetObjectACL(ctx, b, "pub")
		must(t, err)
		if got := fmt.Sprint(info.Grant); !strings.Contains(got, allUsers) || len(info.Grant) != 3 {
			t.Fatalf("minio-go sees grants %s", got)
		}
		_, err = mc.GetObjectACL(ctx, b, "missing")
		wantMinioErr(t, err, http.StatusNotFound, "NoSuchKey")
	})
}

func TestBucketACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bacl"), ACL: types.BucketCannedACLPublicReadWrite})
	must(t, err)
	if got := bucketACL(t, c, "bacl"); got != "owner:FULL_CONTROL,AllUsers:READ,AllUsers:WRITE" {
		t.Fatalf("bucket ACL %s", got)
	}
	bk := aws.String("bacl")
	_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: bk, AccessControlPolicy: &types.AccessControlPolicy{Owner: &types.Owner{ID: aws.String(ownerID())}}})
	must(t, err)
	if got := bucketACL(t, c, "bacl"); got != "" {
		t.Fatalf("every grant revoked, the bucket answers %s", got)
	}
	_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: bk, ACL: "log-delivery-write"})
	must(t, err)
	if got := bucketACL(t, c, "bacl"); got != "owner:FULL_CONTROL,http://acs.amazonaws.com/groups/s3/LogDelivery:WRITE,http://acs.amazonaws.com/groups/s3/LogDelivery:READ_ACP" {
		t.Fatalf("bucket ACL %s", got)
	}
	_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: bk, ACL: types.BucketCannedACLPrivate})
	must(t, err)
	if got := bucketACL(t, c, "bacl"); got != "owner:FULL_CONTROL" {
		t.Fatalf("bucket ACL %s", got)
	}
	_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: bk, GrantWrite: aws.String(`uri="http://acs.amazonaws.com/groups/global/Nobody"`)})
	wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bacl2"), ACL: "bogus"})
	wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("bacl2")})
	wantErr(t, err, http.StatusNotFound, "")
}

// TestACLGrantsNothing: public-read and public-read-write are stored
// and answered, and still admit no anonymous request.
func TestACLGrantsNothing(t *testing.T) {
	t.Parallel()
	srv := nastest.Start(t)
	c := client(t, srv)
	_, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("open"), ACL: types.BucketCannedACLPublicReadWrite})
	must(t, err)
	put(t, c, "open", "pub", []byte("secret"), func(in *s3.PutObjectInput) { in.ACL = types.ObjectCannedACLPublicRead })
	if got := objectACL(t, c, "open", "pub", ""); got != "owner:FULL_CONTROL,AllUsers:READ" {
		t.Fatalf("ACL %s", got)
	}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/open/pub"},
		{http.MethodGet, "/open/pub?acl"},
		{http.MethodGet, "/open"},
		{http.MethodGet, "/open?acl"},
		{http.MethodPut, "/open/new"},
	} {
		req, err := http.NewRequest(tc.method, srv.Endpoint+tc.path, strings.NewReader("anon"))
		must(t, err)
		status, _, body := do(t, req)
		if status != http.StatusForbidden || xmlCode(body) != "AccessDenied" {
			t.Errorf("anonymous %s %s: %d %s", tc.method, tc.path, status, body)
		}
	}
	if keys := listAll(t, c, "open", ""); len(keys) != 1 {
		t.Fatalf("anonymous PUT stored something: %v", keys)
	}
}

// TestLeaseACL: object ACLs are authorized like tags (read to get, write
// to put, hidden keys do not exist); bucket ACLs are the owner's to set.
func TestLeaseACL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own, oc := client(t, srv), ownerCtl(t, srv)
	const repo = "lacl"
	createBucket(t, own, repo)
	for _, k := range []string{"work/a", "ref/r", "secret/s"} {
		put(t, own, repo, k, []byte(k))
	}
	oc.commit(repo, "main", "seed")
	li := oc.newLease(map[string]any{"repo": repo, "role": "acler", "fork_from": "main", "ttl": "1h", "view": []map[string]any{
		{"path": "work/**", "actions": []string{"list", "read", "write"}},
		{"path": "ref/**", "actions": []string{"list", "read"}},
	}})
	lc := leaseS3(t, srv, li)
	bk := aws.String(repo)
	setACL := func(key string) error {
		_, err := lc.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: bk, Key: aws.String(key), ACL: types.ObjectCannedACLPublicRead})
		return err
	}
	must(t, setACL("work/a"))
	if got := objectACL(t, lc, repo, "work/a", ""); got != "owner:FULL_CONTROL,AllUsers:READ" {
		t.Fatalf("lease reads %s", got)
	}
	if got := objectACL(t, own, repo, "work/a", ""); got != "owner:FULL_CONTROL" {
		t.Fatalf("main sees the lease's ACL: %s", got)
	}
	wantErr(t, setACL("ref/r"), http.StatusForbidden, "AccessDenied")
	objectACL(t, lc, repo, "ref/r", "")
	wantErr(t, setACL("secret/s"), http.StatusNotFound, "NoSuchKey")
	_, err := lc.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: bk, Key: aws.String("secret/s")})
	wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	_, err = lc.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: bk, ACL: types.BucketCannedACLPublicRead})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	bucketACL(t, lc, repo)
}
