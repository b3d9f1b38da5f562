package e2e_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/nastest"
)

func TestBuckets(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()

	t.Run("ListBuckets", func(t *testing.T) {
		createBucket(t, c, "list-alpha")
		createBucket(t, c, "list-beta")
		out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		must(t, err)
		var names []string
		for _, b := range out.Buckets {
			names = append(names, aws.ToString(b.Name))
			if b.CreationDate == nil || b.CreationDate.IsZero() {
				t.Errorf("bucket %s has no CreationDate", aws.ToString(b.Name))
			}
		}
		for _, want := range []string{"list-alpha", "list-beta"} {
			if !slices.Contains(names, want) {
				t.Errorf("ListBuckets = %v, missing %s", names, want)
			}
		}
		if out.Owner == nil || aws.ToString(out.Owner.ID) == "" {
			t.Errorf("ListBuckets has no Owner ID")
		}
	})

	t.Run("CreateTwice", func(t *testing.T) {
		createBucket(t, c, "twice")
		// us-east-1's rule: creating a bucket you own succeeds and
		// changes nothing.
		put(t, c, "twice", "kept", []byte("x"))
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("twice")}); err != nil {
			t.Fatalf("CreateBucket of an owned bucket: %v", err)
		}
		got, _ := get(t, c, "twice", "kept")
		wantBytes(t, got, []byte("x"))
	})

	t.Run("CreateWithLocationConstraint", func(t *testing.T) {
		// Clients outside us-east-1 send a CreateBucketConfiguration body.
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{
			Bucket:                    aws.String("located"),
			CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintUsWest2},
		})
		must(t, err)
	})

	t.Run("InvalidName", func(t *testing.T) {
		for _, name := range []string{"UPPER", "ab", "-lead", "192.168.1.1"} {
			_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
			wantErr(t, err, http.StatusBadRequest, "InvalidBucketName")
		}
	})

	t.Run("HeadBucket", func(t *testing.T) {
		createBucket(t, c, "headed")
		_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("headed")})
		must(t, err)
		_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("no-such-bucket")})
		wantErr(t, err, http.StatusNotFound, "")
	})

	t.Run("MissingBucket", func(t *testing.T) {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("no-such-bucket")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("no-such-bucket"), Key: aws.String("k"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, _, err = tryGet(c, "no-such-bucket", "k")
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("no-such-bucket")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
	})

	t.Run("DeleteBucket", func(t *testing.T) {
		createBucket(t, c, "doomed")
		put(t, c, "doomed", "a", []byte("a"))
		put(t, c, "doomed", "dir/b", []byte("b"))
		_, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("doomed")})
		wantErr(t, err, http.StatusConflict, "BucketNotEmpty")
		for _, k := range []string{"a", "dir/b"} {
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("doomed"), Key: aws.String(k)})
			must(t, err)
		}
		out, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("doomed")})
		must(t, err)
		if got := rawStatus(t, out.ResultMetadata); got != http.StatusNoContent {
			t.Errorf("DeleteBucket status %d, want 204", got)
		}
		_, err = c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("doomed")})
		wantErr(t, err, http.StatusNotFound, "")
		// The name is free again and the new bucket starts empty.
		createBucket(t, c, "doomed")
		if keys := listAll(t, c, "doomed", ""); len(keys) != 0 {
			t.Errorf("re-created bucket lists %v", keys)
		}
	})

	t.Run("GetBucketLocation", func(t *testing.T) {
		createBucket(t, c, "where")
		out, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("where")})
		must(t, err)
		// The gateway's region is us-east-1, which S3 reports as empty.
		if out.LocationConstraint != "" {
			t.Errorf("LocationConstraint = %q, want empty (us-east-1)", out.LocationConstraint)
		}
		_, err = c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("no-such-bucket")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
	})

	t.Run("GetBucketVersioning", func(t *testing.T) {
		createBucket(t, c, "versioned")
		out, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("versioned")})
		must(t, err)
		if out.Status != types.BucketVersioningStatusEnabled {
			t.Errorf("versioning Status = %q, want Enabled", out.Status)
		}
		_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("versioned"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		must(t, err)
		_, err = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("versioned"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	})

	t.Run("Unsupported", func(t *testing.T) {
		const b = "untouched"
		createBucket(t, c, b)
		put(t, c, b, "obj", []byte("keep me"))
		bk, key := aws.String(b), aws.String("obj")
		calls := []struct {
			name string
			call func() error
		}{
			{"GetBucketPolicy", func() error { _, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: bk}); return err }},
			{"PutBucketPolicy", func() error {
				_, err := c.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: bk, Policy: aws.String(`{"Version":"2012-10-17","Statement":[]}`)})
				return err
			}},
			{"DeleteBucketPolicy", func() error { _, err := c.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: bk}); return err }},
			{"PutBucketLifecycleConfiguration", func() error {
				_, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: bk,
					LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{
						ID: aws.String("expire"), Status: types.ExpirationStatusEnabled,
						Filter:     &types.LifecycleRuleFilter{Prefix: aws.String("")},
						Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)},
					}}}})
				return err
			}},
			{"DeleteBucketLifecycle", func() error {
				_, err := c.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: bk})
				return err
			}},
			{"GetBucketEncryption", func() error {
				_, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: bk})
				return err
			}},
			{"PutPublicAccessBlock", func() error {
				_, err := c.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: bk,
					PublicAccessBlockConfiguration: &types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(true)}})
				return err
			}},
			{"GetObjectLockConfiguration", func() error {
				_, err := c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: bk})
				return err
			}},
			{"PutObjectWithSSE", func() error {
				_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: bk, Key: key, Body: strings.NewReader("overwrite"),
					ServerSideEncryption: types.ServerSideEncryptionAwsKms})
				return err
			}},
		}
		for _, tc := range calls {
			t.Run(tc.name, func(t *testing.T) {
				wantErr(t, tc.call(), http.StatusNotImplemented, "NotImplemented")
			})
		}
		got, _ := get(t, c, b, "obj")
		if string(got) != "keep me" {
			t.Errorf("object after unsupported calls = %q", got)
		}
		if keys := listAll(t, c, b, ""); !slices.Equal(keys, []string{"obj"}) {
			t.Errorf("bucket after unsupported calls lists %v", keys)
		}
	})

	t.Run("ACL", func(t *testing.T) {
		const b = "acls"
		createBucket(t, c, b)
		put(t, c, b, "private", []byte("p"), func(in *s3.PutObjectInput) { in.ACL = types.ObjectCannedACLPrivate })
		checkFullControl := func(t *testing.T, o *types.Owner, grants []types.Grant) {
			t.Helper()
			if o == nil || aws.ToString(o.ID) == "" {
				t.Fatal("ACL has no owner")
			}
			if len(grants) != 1 {
				t.Fatalf("ACL has %d grants, want 1", len(grants))
			}
			g := grants[0]
			if g.Permission != types.PermissionFullControl {
				t.Errorf("Permission = %q, want FULL_CONTROL", g.Permission)
			}
			if g.Grantee == nil || aws.ToString(g.Grantee.ID) != aws.ToString(o.ID) || g.Grantee.Type != types.TypeCanonicalUser {
				t.Errorf("Grantee = %+v, want the owner %s as CanonicalUser", g.Grantee, aws.ToString(o.ID))
			}
		}
		ba, err := c.GetBucketAcl(ctx, &s3.GetBucketAclInput{Bucket: aws.String(b)})
		must(t, err)
		checkFullControl(t, ba.Owner, ba.Grants)
		oa, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(b), Key: aws.String("private")})
		must(t, err)
		checkFullControl(t, oa.Owner, oa.Grants)

		_, err = c.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(b), Key: aws.String("private"), ACL: types.ObjectCannedACLPrivate})
		must(t, err)
		_, err = c.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(b), ACL: types.BucketCannedACLPrivate})
		must(t, err)
		_, err = c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(b), Key: aws.String("missing")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})
}
