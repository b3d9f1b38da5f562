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

// TestLeasePostObject: a form signed with a lease's credentials is held
// to the lease exactly as a PUT is: its view, its write budget, its
// revocation.
func TestLeasePostObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "lform"
	createBucket(t, own, repo)
	put(t, own, repo, "shared/launch/seed", []byte("seed"))
	oc.commit(repo, "main", "seed")
	mk := func(t *testing.T, budgets map[string]any) (*leaseInfo, *s3.Client) {
		li := oc.as(t).newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h", "budgets": budgets,
			"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read", "write"}})
		return li, leaseS3(t, srv, li, noChecksumValidation)
	}
	u := srv.Endpoint + "/" + repo
	hour := time.Now().Add(time.Hour)
	anyKey := []any{"starts-with", "$key", ""}

	t.Run("InsideTheView", func(t *testing.T) {
		li, c := mk(t, nil)
		data := randBytes("lease-form", 70000)
		fields := with(signedForm(t, li.Creds, repo, hour, anyKey, []any{"starts-with", "$x-amz-meta-run", ""}),
			"key", "shared/launch/out.bin", "x-amz-meta-run", li.Run)
		st, h, body := postForm(t, u, fields, "out.bin", data)
		if st != http.StatusNoContent || h.Get("ETag") != etagOf(data) {
			t.Fatalf("%d %s", st, body)
		}
		got, out := get(t, c, repo, "shared/launch/out.bin")
		wantBytes(t, got, data)
		if out.Metadata["run"] != li.Run {
			t.Fatalf("metadata %v", out.Metadata)
		}
		// On the lease's branch, not on main.
		ownerHas(t, own, repo, li.Branch, "shared/launch/out.bin", data)
		absent(t, own, repo, "shared/launch/out.bin")
	})
	t.Run("OutsideTheViewAnswersAsPut", func(t *testing.T) {
		li, c := mk(t, nil)
		_, perr := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("secret/x"), Body: strings.NewReader("x")})
		fields := with(signedForm(t, li.Creds, repo, hour, anyKey), "key", "secret/x")
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		if st != errStatus(perr) || xmlCode(body) != errCode(perr) || st != http.StatusNotFound {
			t.Fatalf("form %d %s; PutObject %d %s", st, xmlCode(body), errStatus(perr), errCode(perr))
		}
		// Another repository is NoSuchBucket, as for a PUT.
		createBucket(t, own, "elsewhere")
		fields = with(signedForm(t, li.Creds, "elsewhere", hour, anyKey), "key", "shared/launch/x")
		st, _, body = postForm(t, srv.Endpoint+"/elsewhere", fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusNotFound, "NoSuchBucket", "")
		absent(t, own, "elsewhere", "shared/launch/x")
	})
	t.Run("WriteBudget", func(t *testing.T) {
		li, c := mk(t, map[string]any{"bytes_written": 1000})
		form := func(key string) []formField { return with(signedForm(t, li.Creds, repo, hour, anyKey), "key", key) }
		st, h, body := postForm(t, u, form("shared/launch/w1"), "w", randBytes("w1", 600))
		if st != http.StatusNoContent || h.Get("x-nas-budget-remaining-bytes-written") != "400" {
			t.Fatalf("%d %v %s", st, h, body)
		}
		st, _, body = postForm(t, u, form("shared/launch/w2"), "w", randBytes("w2", 600))
		wantFormErr(t, st, body, http.StatusForbidden, "QuotaExceeded", "bytes_written")
		ownBr := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}})
		absent(t, ownBr, repo, "shared/launch/w2")
		// The refused form kept nothing of the budget: 400 bytes still fit.
		if st, _, body := postForm(t, u, form("shared/launch/w3"), "w", randBytes("w3", 400)); st != http.StatusNoContent {
			t.Fatalf("a form that fits: %d %s", st, body)
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/w4"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
	})
	t.Run("Revoked", func(t *testing.T) {
		li, _ := mk(t, nil)
		fields := with(signedForm(t, li.Creds, repo, hour, anyKey), "key", "shared/launch/after-revoke")
		oc.as(t).revoke(li.ID)
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "InvalidAccessKeyId", "")
		ownerBr := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}})
		absent(t, ownerBr, repo, "shared/launch/after-revoke")
	})
	t.Run("ForgedToken", func(t *testing.T) {
		li, _ := mk(t, nil)
		creds := li.Creds
		creds.SessionToken = "forged"
		fields := with(signedForm(t, creds, repo, hour, anyKey), "key", "shared/launch/forged")
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusBadRequest, "InvalidToken", "")
	})
}
