package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
)

// TestBranchLimits: quotas refuse growing writes over S3 with a quota
// error (and let shrinking ones through); a branch's time to live makes it
// vanish for S3 and the control API, and the gateway recycles it; a run's
// forked branch gets the role's limits and never expires before its lease.
func TestBranchLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "limits"
	createBucket(t, own, repo)
	put(t, own, repo, "seed", []byte("0123456789"))
	oc.commit(repo, "main", "seed")

	t.Run("Quota", func(t *testing.T) {
		b := oc.as(t).ok("branch/create", map[string]any{"repo": repo, "name": "small", "from": "main", "quota_bytes": 30, "quota_objects": 3})["branch"].(map[string]any)
		if b["quota_bytes"] != float64(30) || b["quota_objects"] != float64(3) {
			t.Fatalf("branch/create answered %v", b)
		}
		c := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("small")}})
		put(t, c, repo, "a", []byte(strings.Repeat("a", 15)))
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("b"), Body: strings.NewReader(strings.Repeat("b", 6))})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		// Through the alias bucket too, and through a copy.
		_, err = own.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(alias(repo, "small")), Key: aws.String("copy"), CopySource: aws.String(repo + "/seed")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		if _, _, err := tryGet(c, repo, "b"); errCode(err) != "NoSuchKey" {
			t.Fatalf("a refused PUT is visible: %v", err)
		}
		put(t, c, repo, "a", []byte("a")) // shrinking passes
		put(t, c, repo, "b", []byte(strings.Repeat("b", 19)))
		u := oc.as(t).ok("branch/get", map[string]any{"repo": repo, "name": "small"})["branch"].(map[string]any)["usage"].(map[string]any)
		if u["bytes"] != float64(30) || u["objects"] != float64(3) {
			t.Fatalf("usage %v", u)
		}
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("c"), Body: strings.NewReader("")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded") // the object quota
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("b")}); err != nil {
			t.Fatal(err)
		}
		put(t, c, repo, "c", []byte("c"))
		oc.as(t).ok("branch/limits", map[string]any{"repo": repo, "name": "small", "quota_bytes": 0, "quota_objects": 0})
		put(t, c, repo, "d", []byte(strings.Repeat("d", 100)))
		oc.as(t).fails("branch/limits", map[string]any{"repo": repo, "name": "small", "quota_bytes": -1}, http.StatusBadRequest, "InvalidArgument")
	})

	t.Run("TTL", func(t *testing.T) {
		oc.as(t).ok("branch/create", map[string]any{"repo": repo, "name": "brief", "from": "main", "ttl": "1s"})
		c := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("brief")}})
		put(t, c, repo, "work", []byte("w"))
		oc.as(t).fails("branch/limits", map[string]any{"repo": repo, "name": "main", "ttl": "1h"}, http.StatusBadRequest, "InvalidArgument")
		time.Sleep(1100 * time.Millisecond)
		if _, _, err := tryGet(c, repo, "work"); errCode(err) != "NoSuchBucket" {
			t.Fatalf("GET on an expired branch: %v", err)
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("more"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		oc.as(t).fails("commit/log", map[string]any{"repo": repo, "ref": "brief"}, http.StatusNotFound, "NotFound")
		n, err := srv.Gateway.ExpireBranches(ctx)
		if err != nil || n != 1 {
			t.Fatalf("recycled %d branches: %v", n, err)
		}
		oc.as(t).fails("branch/get", map[string]any{"repo": repo, "name": "brief"}, http.StatusNotFound, "NotFound")
		recs := oc.as(t).ok("record/list", map[string]any{"repo": repo, "kinds": []string{"branch.expired"}})["records"].([]any)
		if len(recs) != 1 {
			t.Fatalf("%d branch.expired records", len(recs))
		}
	})

	t.Run("RunBranch", func(t *testing.T) {
		li := oc.as(t).newLease(map[string]any{"repo": repo, "role": "etl", "fork_from": "main", "paths": []string{"**"},
			"actions": []string{"list", "read", "write"}, "ttl": "2h", "branch_ttl": "1h", "branch_quota_objects": 2})
		b := oc.as(t).ok("branch/get", map[string]any{"repo": repo, "name": li.Branch})["branch"].(map[string]any)
		exp, err := time.Parse(time.RFC3339Nano, b["expires_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(exp); d < 119*time.Minute || d > 121*time.Minute {
			t.Fatalf("run branch expires in %s; a branch TTL shorter than its lease must stretch to the lease (2h)", d)
		}
		c := leaseS3(t, srv, li)
		put(t, c, repo, "x", []byte("x")) // seed + x = 2 objects
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("y"), Body: strings.NewReader("y")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		// A lease cannot change its branch's limits.
		leaseCtl(t, srv, li).fails("branch/limits", map[string]any{"repo": repo, "name": li.Branch, "quota_objects": 0}, http.StatusForbidden, "AccessDenied")
	})
}
