package e2e_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/nastest"
)

// signedFormV2 signs a form the Signature Version 2 way (AWSAccessKeyId,
// signature: the base64 HMAC-SHA1 of the policy), as boto2-era clients
// and ceph/s3-tests do.
func signedFormV2(t testing.TB, creds aws.Credentials, bucket string, exp time.Time, conds ...any) []formField {
	t.Helper()
	all := append([]any{exact("bucket", bucket)}, conds...)
	fields := []formField{{"AWSAccessKeyId", creds.AccessKeyID}}
	if creds.SessionToken != "" {
		fields = append(fields, formField{"x-amz-security-token", creds.SessionToken})
		all = append(all, exact("x-amz-security-token", creds.SessionToken))
	}
	doc, err := json.Marshal(map[string]any{"expiration": exp.UTC().Format("2006-01-02T15:04:05.000Z"), "conditions": all})
	must(t, err)
	policy := base64.StdEncoding.EncodeToString(doc)
	m := hmac.New(sha1.New, []byte(creds.SecretAccessKey))
	m.Write([]byte(policy))
	return append(fields, formField{"policy", policy}, formField{"signature", base64.StdEncoding.EncodeToString(m.Sum(nil))})
}

func TestPostObjectSigV2(t *testing.T) {
	t.Parallel()
	srv := nastest.Start(t)
	own := client(t, srv)
	const bucket = "forms2"
	createBucket(t, own, bucket)
	u := srv.Endpoint + "/" + bucket
	hour := time.Now().Add(time.Hour)
	cond := []any{[]any{"starts-with", "$key", "v2/"}, []any{"content-length-range", 0, 1 << 20}}

	t.Run("Owner", func(t *testing.T) {
		st, _, body := postForm(t, u, with(signedFormV2(t, owner, bucket, hour, cond...), "key", "v2/a.txt"), "a.txt", []byte("v2 form"))
		if st != http.StatusNoContent {
			t.Fatalf("SigV2 form: %d %s", st, body)
		}
		got, _ := get(t, own, bucket, "v2/a.txt")
		wantBytes(t, got, []byte("v2 form"))
	})
	t.Run("Tampered", func(t *testing.T) {
		fields := with(signedFormV2(t, owner, bucket, hour, cond...), "key", "v2/b.txt")
		for i := range fields {
			if fields[i].name == "signature" {
				fields[i].value = base64.StdEncoding.EncodeToString(make([]byte, 20))
			}
		}
		st, _, body := postForm(t, u, fields, "b.txt", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "SignatureDoesNotMatch", "")
		absent(t, own, bucket, "v2/b.txt")
	})
	t.Run("GarbledSignature", func(t *testing.T) {
		fields := with(signedFormV2(t, owner, bucket, hour, cond...), "key", "v2/g.txt")
		for i := range fields {
			if fields[i].name == "signature" {
				fields[i].value = "==" + fields[i].value[2:] // not base64 any more
			}
		}
		st, _, body := postForm(t, u, fields, "g.txt", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "SignatureDoesNotMatch", "")
	})
	t.Run("ChecksumNeedsNoCondition", func(t *testing.T) {
		data := []byte("checked bytes")
		sum := sha256.Sum256(data)
		good := base64.StdEncoding.EncodeToString(sum[:])
		st, _, body := postForm(t, u, with(signedFormV2(t, owner, bucket, hour, cond...), "key", "v2/sum.txt",
			"x-amz-checksum-sha256", good), "sum.txt", data)
		if st != http.StatusNoContent {
			t.Fatalf("form with a right checksum: %d %s", st, body)
		}
		st, _, body = postForm(t, u, with(signedFormV2(t, owner, bucket, hour, cond...), "key", "v2/bad.txt",
			"x-amz-checksum-sha256", good), "bad.txt", []byte("other bytes"))
		if st != http.StatusBadRequest {
			t.Fatalf("form with a wrong checksum: %d %s", st, body)
		}
		absent(t, own, bucket, "v2/bad.txt")
	})
	t.Run("WrongSecret", func(t *testing.T) {
		bad := owner
		bad.SecretAccessKey = "not-the-secret-0000000000000000"
		st, _, body := postForm(t, u, with(signedFormV2(t, bad, bucket, hour, cond...), "key", "v2/c.txt"), "c.txt", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "SignatureDoesNotMatch", "")
	})
	t.Run("OutsidePolicy", func(t *testing.T) {
		st, _, body := postForm(t, u, with(signedFormV2(t, owner, bucket, hour, cond...), "key", "other/d.txt"), "d.txt", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "")
		absent(t, own, bucket, "other/d.txt")
	})
}
