package e2e_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/nastest"
)

// TestLeaseCors: CORS is the bucket owner's configuration. A lease gets
// its bucket's CORS headers, cannot change or read the configuration
// (as with bucket tagging), learns nothing of buckets outside its world,
// and a preflight, which has no lease, costs it nothing.
func TestLeaseCors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own, oc := client(t, srv), ownerCtl(t, srv)
	const repo, other = "lcors", "lcorsother"
	createBucket(t, own, repo)
	createBucket(t, own, other)
	put(t, own, repo, "work/a", []byte("a"))
	put(t, own, other, "x", []byte("x"))
	oc.commit(repo, "main", "seed")
	putCors(t, own, repo, appRule)
	putCors(t, own, other, appRule)
	li := oc.newLease(map[string]any{"repo": repo, "role": "pager", "fork_from": "main", "ttl": "1h",
		"budgets": map[string]any{"requests": 100},
		"view":    []map[string]any{{"path": "work/**", "actions": []string{"list", "read", "write"}}}})
	lc := leaseS3(t, srv, li, noChecksumValidation)
	bk := aws.String(repo)

	_, err := lc.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: bk,
		CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}}}}})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	_, err = lc.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: bk})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	_, err = lc.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bk})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	_, err = lc.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: aws.String(other)})
	wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
	if out, err := own.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bk}); err != nil || len(out.CORSRules) != 1 {
		t.Fatalf("the lease changed the configuration: %v", err)
	}

	origin := http.Header{"Origin": {"https://app.example.com"}}
	st, h, _ := rawDo(t, http.MethodGet, srv.Endpoint+"/"+repo+"/work/a", nil, li.Creds, origin)
	if st != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("lease GET with Origin: %d %v", st, h)
	}
	left := remaining(h)["x-nas-budget-remaining-requests"]
	st, h, body := rawDo(t, http.MethodGet, srv.Endpoint+"/"+other+"/x", nil, li.Creds, origin)
	if st != http.StatusNotFound || xmlCode(body) != "NoSuchBucket" || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("lease GET of a bucket outside its world: %d %s %v", st, body, h)
	}
	left-- // that request was charged

	pg, err := s3.NewPresignClient(lc).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: bk, Key: aws.String("work/a")})
	must(t, err)
	for range 5 {
		if st, _, _ := send(t, http.MethodOptions, pg.URL, preflightHeaders("https://app.example.com", "GET", ""), nil); st != 200 {
			t.Fatalf("preflight of a lease's presigned URL: %d", st)
		}
	}
	st, h, _ = send(t, http.MethodGet, pg.URL, origin, nil)
	if st != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("lease's presigned GET: %d %v", st, h)
	}
	if got := remaining(h)["x-nas-budget-remaining-requests"]; got != left-1 {
		t.Errorf("requests left %d after five preflights and a GET, want %d: a preflight was charged", got, left-1)
	}
}
