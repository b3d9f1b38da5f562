package e2e_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentnas/nas/nastest"
)

// STS GetSessionToken: owner credentials that die at expiry.

func TestGetSessionToken(t *testing.T) {
	nastest.SkipInCluster(t, "the test moves one gateway's clock")
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "sessions"
	createBucket(t, own, repo)
	put(t, own, repo, "a.txt", []byte("owner's"))
	stc := newSTS(t, srv, staticCreds(owner))

	out, err := stc.GetSessionToken(ctx, &sts.GetSessionTokenInput{DurationSeconds: aws.Int32(900)})
	must(t, err)
	ses := aws.Credentials{AccessKeyID: aws.ToString(out.Credentials.AccessKeyId), SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey),
		SessionToken: aws.ToString(out.Credentials.SessionToken), CanExpire: true, Expires: aws.ToTime(out.Credentials.Expiration)}
	if d := time.Until(ses.Expires); d < 14*time.Minute || d > 16*time.Minute {
		t.Fatalf("session lives %s, want 15m", d)
	}
	sc := credsS3(t, srv, ses)
	sctl := &ctl{t: t, srv: srv, creds: ses}
	presigned := func(t *testing.T, key string) string {
		req, err := s3.NewPresignClient(sc).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String(key)})
		must(t, err)
		return req.URL
	}

	t.Run("ActsAsTheOwner", func(t *testing.T) {
		got, _ := get(t, sc, repo, "a.txt")
		wantBytes(t, got, []byte("owner's"))
		put(t, sc, repo, "b.txt", []byte("by the session"))
		got, _ = get(t, own, repo, "b.txt") // on main: no lease, no fork
		wantBytes(t, got, []byte("by the session"))
		createBucket(t, sc, "sessions-made")
		sctl.ok("role/put", map[string]any{"name": "made", "repo": repo, "view": []map[string]any{{"path": "**", "actions": []string{"read"}}}})
		id, err := newSTS(t, srv, staticCreds(ses)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		must(t, err)
		if aws.ToString(id.Arn) != "arn:aws:iam::000000000000:user/owner" {
			t.Errorf("session caller identity %q", aws.ToString(id.Arn))
		}
		st, _, body := do(t, mustRequest(t, presigned(t, "a.txt")))
		if st != http.StatusOK || string(body) != "owner's" {
			t.Errorf("presigned GET: %d %s", st, body)
		}
		st, _, body = do(t, v2Request(t, ses, http.MethodGet, srv.Endpoint, "/"+repo+"/a.txt", nil, nil, nil))
		if st != http.StatusOK || string(body) != "owner's" {
			t.Errorf("SigV2 GET: %d %s", st, body)
		}
		fields := with(signedForm(t, ses, repo, time.Now().Add(time.Hour), []any{"starts-with", "$key", ""}), "key", "form.txt")
		if st, _, body := postForm(t, srv.Endpoint+"/"+repo, fields, "form.txt", []byte("form")); st != http.StatusNoContent {
			t.Errorf("POST form: %d %s", st, body)
		}
	})

	t.Run("OnlyTheOwnersKeysMintSessions", func(t *testing.T) {
		_, err := newSTS(t, srv, staticCreds(ses)).GetSessionToken(ctx, &sts.GetSessionTokenInput{})
		wantAPIError(t, err, "AccessDenied")
		li := oc.newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h",
			"paths": []string{"**"}, "actions": []string{"list", "read"}})
		_, err = newSTS(t, srv, staticCreds(li.Creds)).GetSessionToken(ctx, &sts.GetSessionTokenInput{})
		wantAPIError(t, err, "AccessDenied")
		_, err = newSTS(t, srv, aws.AnonymousCredentials{}).GetSessionToken(ctx, &sts.GetSessionTokenInput{})
		if err == nil {
			t.Fatal("an anonymous caller got a session")
		}
		for _, d := range []int32{899, 129601} {
			_, err = stc.GetSessionToken(ctx, &sts.GetSessionTokenInput{DurationSeconds: aws.Int32(d)})
			wantAPIError(t, err, "ValidationError")
		}
		out, err := stc.GetSessionToken(ctx, &sts.GetSessionTokenInput{})
		must(t, err)
		if d := time.Until(aws.ToTime(out.Credentials.Expiration)); d < 11*time.Hour || d > 13*time.Hour {
			t.Errorf("default session lives %s, want 12h", d)
		}
		forged := ses
		forged.SessionToken = strings.Replace(ses.SessionToken, ".", ".x", 1)
		_, _, err = tryGet(credsS3(t, srv, forged), repo, "a.txt")
		wantErr(t, err, http.StatusBadRequest, "InvalidToken")
	})

	t.Run("DeadAfterExpiry", func(t *testing.T) {
		url := presigned(t, "a.txt")
		srv.Gateway.Leases.SetClock(func() time.Time { return time.Now().Add(16 * time.Minute) })
		t.Cleanup(func() { srv.Gateway.Leases.SetClock(time.Now) })
		_, _, err := tryGet(sc, repo, "a.txt")
		wantErr(t, err, http.StatusBadRequest, "ExpiredToken")
		_, err = sc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("late"), Body: bytes.NewReader([]byte("x"))})
		wantErr(t, err, http.StatusBadRequest, "ExpiredToken")
		if st, _, body := do(t, mustRequest(t, url)); st != http.StatusBadRequest || xmlCode(body) != "ExpiredToken" {
			t.Errorf("presigned GET after expiry: %d %s", st, body)
		}
		if st, _, body := do(t, v2Request(t, ses, http.MethodGet, srv.Endpoint, "/"+repo+"/a.txt", nil, nil, nil)); st != http.StatusBadRequest || xmlCode(body) != "ExpiredToken" {
			t.Errorf("SigV2 after expiry: %d %s", st, body)
		}
		fields := with(signedForm(t, ses, repo, time.Now().Add(time.Hour), []any{"starts-with", "$key", ""}), "key", "late-form")
		if st, _, body := postForm(t, srv.Endpoint+"/"+repo, fields, "late", []byte("x")); st != http.StatusBadRequest || xmlCode(body) != "ExpiredToken" {
			t.Errorf("POST form after expiry: %d %s", st, body)
		}
		// The control API answers dead credentials as it does a dead lease's.
		e := sctl.fails("role/list", map[string]any{}, http.StatusForbidden, "Unauthenticated")
		if d, _ := e["details"].(map[string]any); d["reason"] != "expired" {
			t.Errorf("control API after expiry: %v", e)
		}
		_, err = newSTS(t, srv, staticCreds(ses)).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		wantAPIError(t, err, "ExpiredToken")
		absent(t, own, repo, "late")
	})
}

func mustRequest(t testing.TB, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err)
	return req
}
