package api_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestVeilOverWrites: a lease's conditional writes and deletes of a key
// above its sensitivity ceiling answer exactly as for a missing key
// (never 412, never a delete marker), the hidden entry stays, and each
// hidden entry is recorded as a refusal.
func TestVeilOverWrites(t *testing.T) {
	f := newGuardFixture(t)
	ctx := context.Background()
	lc, l := leaseClient(t, f.c, map[string]any{"repo": "grd", "role": "prober", "fork_from": "main", "paths": []string{"**"},
		"actions": []string{"list", "read", "write", "delete"}})
	ls3 := s3Of(f.c, lc.creds)
	br := l["branch"].(string)
	onBranch := s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", br))
	secret, missing := "vault/key.txt", "vault/none.txt"
	h, err := f.owner.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("grd"), Key: aws.String(secret)}, onBranch)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, in s3.PutObjectInput) string {
		in.Bucket, in.Key, in.Body = aws.String("grd"), aws.String(key), strings.NewReader("probe")
		_, err := ls3.PutObject(ctx, &in, onBranch)
		return errCode(err)
	}
	for name, in := range map[string]s3.PutObjectInput{
		"If-Match *":    {IfMatch: aws.String("*")},
		"If-Match etag": {IfMatch: h.ETag},
	} {
		if s, m := put(secret, in), put(missing, in); s != m || s != "NoSuchKey" {
			t.Errorf("PUT %s: the secret answers %q, a missing key %q; want NoSuchKey for both", name, s, m)
		}
	}
	del := func(key, vid string) string {
		in := &s3.DeleteObjectInput{Bucket: aws.String("grd"), Key: aws.String(key)}
		if vid != "" {
			in.VersionId = aws.String(vid)
		}
		out, err := ls3.DeleteObject(ctx, in, onBranch)
		if err != nil {
			return errCode(err)
		}
		return fmt.Sprintf("marker=%v vid=%q", aws.ToBool(out.DeleteMarker), aws.ToString(out.VersionId))
	}
	if s, m := del(secret, ""), del(missing, ""); s != m {
		t.Errorf("DELETE: the secret answers %s, a missing key %s", s, m)
	}
	if s, m := del(secret, *h.VersionId), del(missing, *h.VersionId); s != strings.Replace(m, "none", "key", 1) {
		t.Errorf("DELETE ?versionId: the secret answers %s, a missing key %s", s, m)
	}
	objs := []s3types.ObjectIdentifier{{Key: aws.String(secret)}, {Key: aws.String(missing)}, {Key: aws.String(secret), VersionId: h.VersionId}}
	out, err := ls3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("grd"), Delete: &s3types.Delete{Objects: objs}}, onBranch)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range out.Errors {
		t.Errorf("DeleteObjects %s: %s %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
	}
	for _, d := range out.Deleted {
		if aws.ToBool(d.DeleteMarker) || aws.ToString(d.DeleteMarkerVersionId) != "" {
			t.Errorf("DeleteObjects made a delete marker for %s", aws.ToString(d.Key))
		}
	}
	if after, err := f.owner.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("grd"), Key: aws.String(secret)}, onBranch); err != nil ||
		*after.ETag != *h.ETag || *after.VersionId != *h.VersionId {
		t.Fatalf("the secret after the lease's deletes: %v %v", after, err)
	}
	if s := put(secret, s3.PutObjectInput{IfNoneMatch: aws.String("*")}); s != "" {
		t.Fatalf("PUT If-None-Match * over the hidden secret: %s, want it written as over a missing key", s)
	}
	evs := f.c.ok("record/list", map[string]any{"repo": "grd", "kinds": []string{"denied"}})["records"].([]any)
	hid := 0
	for _, e := range evs {
		d, _ := e.(map[string]any)["decision"].(map[string]any)
		if r, _ := d["rule"].(string); strings.Contains(r, "sensitivity ceiling") {
			hid++
		}
	}
	if hid == 0 {
		t.Fatalf("no record of what the veil hid among %d denied events", len(evs))
	}
}

// errCode is an S3 error's code, "" for none.
func errCode(err error) string {
	var re interface{ ErrorCode() string }
	if errors.As(err, &re) {
		return re.ErrorCode()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
