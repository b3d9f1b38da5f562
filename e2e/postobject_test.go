package e2e_test

// POST Object: browser form uploads signed by a POST policy, with the
// owner's credentials, a lease's, and minio-go's PresignedPostPolicy.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"

	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/sigv4"
)

// formField is one field of a form, in order.
type formField struct{ name, value string }

// exact is a policy condition {"name": "value"}.
func exact(name, value string) map[string]string { return map[string]string{name: value} }

// signedForm returns the fields that sign a form for bucket with creds:
// a policy of conds (plus the bucket and the signature fields, as a
// client adds them) expiring at exp, and its signature.
func signedForm(t testing.TB, creds aws.Credentials, bucket string, exp time.Time, conds ...any) []formField {
	t.Helper()
	now := time.Now().UTC()
	date := now.Format("20060102")
	cred := creds.AccessKeyID + "/" + date + "/" + regionA + "/s3/aws4_request"
	fields := []formField{{"x-amz-algorithm", "AWS4-HMAC-SHA256"}, {"x-amz-credential", cred}, {"x-amz-date", now.Format("20060102T150405Z")}}
	if creds.SessionToken != "" {
		fields = append(fields, formField{"x-amz-security-token", creds.SessionToken})
	}
	all := []any{exact("bucket", bucket)}
	for _, f := range fields {
		all = append(all, exact(f.name, f.value))
	}
	doc, err := json.Marshal(map[string]any{"expiration": exp.UTC().Format("2006-01-02T15:04:05.000Z"), "conditions": append(all, conds...)})
	must(t, err)
	policy := base64.StdEncoding.EncodeToString(doc)
	return append(fields, formField{"policy", policy}, formField{"x-amz-signature", policySignature(creds.SecretAccessKey, date, policy)})
}

// policySignature is the SigV4 signature of a policy.
func policySignature(secret, date, policy string) string {
	m := hmac.New(sha256.New, sigv4.SigningKey(secret, date, regionA, "s3"))
	m.Write([]byte(policy))
	return hex.EncodeToString(m.Sum(nil))
}

// postForm POSTs fields and then the file to url (redirects not
// followed) and returns status, headers and body.
func postForm(t testing.TB, u string, fields []formField, fileName string, file []byte, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		must(t, w.WriteField(f.name, f.value))
	}
	fw, err := w.CreateFormFile("file", fileName)
	must(t, err)
	fw.Write(file)
	must(t, w.Close())
	req, err := http.NewRequest(http.MethodPost, u, &b)
	must(t, err)
	req.Header.Set("Content-Type", w.FormDataContentType())
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, resp.Header, body
}

// with returns the fields of kv (name, value pairs) followed by signed.
func with(signed []formField, kv ...string) []formField {
	var out []formField
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, formField{kv[i], kv[i+1]})
	}
	return append(out, signed...)
}

// wantFormErr asserts an S3 error answer and that its message says why.
func wantFormErr(t testing.TB, st int, body []byte, status int, code, why string) {
	t.Helper()
	var doc struct{ Code, Message string }
	_ = xml.Unmarshal(body, &doc)
	if st != status || doc.Code != code || !strings.Contains(doc.Message, why) {
		t.Fatalf("got %d %s, want %d %s saying %q", st, body, status, code, why)
	}
}

// absent asserts the owner sees no key in bucket.
func absent(t testing.TB, c *s3.Client, bucket, key string) {
	t.Helper()
	_, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	wantErr(t, err, http.StatusNotFound, "")
}

func TestPostObject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	const bucket = "forms"
	createBucket(t, own, bucket)
	u := srv.Endpoint + "/" + bucket
	hour := time.Now().Add(time.Hour)
	up := []any{[]any{"starts-with", "$key", "up/"}, []any{"content-length-range", 0, 8 << 20}}

	t.Run("Owner204", func(t *testing.T) {
		data := randBytes("form", 3<<20+17) // several chunks
		fields := with(signedForm(t, owner, bucket, hour, append(up, exact("Content-Type", "text/plain"),
			[]any{"starts-with", "$x-amz-meta-color", "bl"}, exact("acl", "private"))...),
			"key", "up/a.txt", "acl", "private", "Content-Type", "text/plain", "x-amz-meta-color", "blue", "x-ignore-me", "1")
		st, h, body := postForm(t, u, fields, "a.txt", data)
		if st != http.StatusNoContent || h.Get("ETag") != etagOf(data) || len(body) != 0 {
			t.Fatalf("%d %v %s", st, h, body)
		}
		got, out := get(t, own, bucket, "up/a.txt")
		wantBytes(t, got, data)
		if aws.ToString(out.ContentType) != "text/plain" || out.Metadata["color"] != "blue" || aws.ToString(out.ETag) != etagOf(data) {
			t.Fatalf("stored %q %v %q", aws.ToString(out.ContentType), out.Metadata, aws.ToString(out.ETag))
		}
	})
	t.Run("Status201", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, hour, append(up, exact("success_action_status", "201"))...),
			"key", "up/b.txt", "success_action_status", "201")
		st, _, body := postForm(t, u, fields, "b.txt", []byte("bee"))
		var doc struct {
			XMLName                     xml.Name `xml:"PostResponse"`
			Location, Bucket, Key, ETag string
		}
		if st != http.StatusCreated || xml.Unmarshal(body, &doc) != nil {
			t.Fatalf("%d %s", st, body)
		}
		if doc.Bucket != bucket || doc.Key != "up/b.txt" || doc.ETag != etagOf([]byte("bee")) || doc.Location != u+"/up/b.txt" {
			t.Fatalf("PostResponse %+v", doc)
		}
	})
	t.Run("Status200", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, hour, append(up, exact("success_action_status", "200"))...),
			"key", "up/c.txt", "success_action_status", "200")
		if st, _, body := postForm(t, u, fields, "c.txt", []byte("sea")); st != http.StatusOK || len(body) != 0 {
			t.Fatalf("%d %s", st, body)
		}
		got, _ := get(t, own, bucket, "up/c.txt")
		wantBytes(t, got, []byte("sea"))
	})
	t.Run("Redirect303", func(t *testing.T) {
		to := "https://example.com/done?x=1"
		fields := with(signedForm(t, owner, bucket, hour, append(up, exact("success_action_redirect", to))...),
			"key", "up/r t.txt", "success_action_redirect", to)
		st, h, _ := postForm(t, u, fields, "r.txt", []byte("are"))
		want := to + "&bucket=forms&key=up%2Fr+t.txt&etag=" + url.QueryEscape(etagOf([]byte("are")))
		if st != http.StatusSeeOther || h.Get("Location") != want {
			t.Fatalf("%d Location %q, want %q", st, h.Get("Location"), want)
		}
	})
	t.Run("Filename", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "up/${filename}")
		if st, _, body := postForm(t, u, fields, "photo.jpg", []byte("jpeg")); st != http.StatusNoContent {
			t.Fatalf("%d %s", st, body)
		}
		got, _ := get(t, own, bucket, "up/photo.jpg")
		wantBytes(t, got, []byte("jpeg"))
	})
	t.Run("ContentLengthRange", func(t *testing.T) {
		sized := with(signedForm(t, owner, bucket, hour, []any{"starts-with", "$key", ""}, []any{"content-length-range", 10, 100}), "key", "up/sized")
		st, _, body := postForm(t, u, sized, "s", []byte("tiny"))
		wantFormErr(t, st, body, http.StatusBadRequest, "EntityTooSmall", "smaller than the minimum")
		st, _, body = postForm(t, u, sized, "s", randBytes("big", 101))
		wantFormErr(t, st, body, http.StatusBadRequest, "EntityTooLarge", "exceeds the maximum")
		absent(t, own, bucket, "up/sized")
		if st, _, body := postForm(t, u, sized, "s", randBytes("ok", 100)); st != http.StatusNoContent {
			t.Fatalf("100 bytes: %d %s", st, body)
		}
	})
	t.Run("Expired", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, time.Now().Add(-time.Minute), up...), "key", "up/late")
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "Invalid according to Policy: Policy expired.")
		absent(t, own, bucket, "up/late")
	})
	t.Run("TamperedPolicy", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "admin/x")
		wider := with(signedForm(t, owner, bucket, hour, []any{"starts-with", "$key", ""}), "key", "admin/x")
		for i := range fields {
			if fields[i].name == "policy" {
				fields[i].value = wider[i].value // a policy the signature does not cover
			}
		}
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "SignatureDoesNotMatch", "")
		absent(t, own, bucket, "admin/x")
	})
	t.Run("MissingKey", func(t *testing.T) {
		st, _, body := postForm(t, u, signedForm(t, owner, bucket, hour, up...), "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusBadRequest, "InvalidArgument", "Bucket POST must contain a field named 'key'.")
	})
	t.Run("ExtraField", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "up/extra", "x-amz-meta-sneaky", "1")
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "Invalid according to Policy: Extra input fields: x-amz-meta-sneaky")
		absent(t, own, bucket, "up/extra")
	})
	t.Run("StartsWithFails", func(t *testing.T) {
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "admin/x")
		st, _, body := postForm(t, u, fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", `Invalid according to Policy: Policy Condition failed: ["starts-with", "$key", "up/"]`)
		absent(t, own, bucket, "admin/x")
	})
	t.Run("WrongBucket", func(t *testing.T) {
		createBucket(t, own, "forms2")
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "up/x")
		st, _, body := postForm(t, srv.Endpoint+"/forms2", fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "Policy Condition failed")
	})
	t.Run("Anonymous", func(t *testing.T) {
		st, _, body := postForm(t, u, []formField{{"key", "up/anon"}}, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "anonymous")
		absent(t, own, bucket, "up/anon")
	})
	t.Run("UnsignedHeader", func(t *testing.T) {
		// A form signs no header, so it cannot pick a branch by header.
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "up/hdr")
		st, _, body := postForm(t, u, fields, "x", []byte("x"), "x-nas-branch", "other")
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "not signed")
	})
	t.Run("OtherPostsStillNeedAuthorization", func(t *testing.T) {
		// Only a POST to a bucket without query takes the form path:
		// ?delete without Authorization is anonymous, whatever its body.
		fields := with(signedForm(t, owner, bucket, hour, up...), "key", "up/a.txt")
		st, _, body := postForm(t, u+"?delete", fields, "x", []byte("x"))
		wantFormErr(t, st, body, http.StatusForbidden, "AccessDenied", "anonymous")
		got, _ := get(t, own, bucket, "up/a.txt")
		if len(got) != 3<<20+17 {
			t.Fatalf("up/a.txt changed: %d bytes", len(got))
		}
	})
	t.Run("MinioPresignedPostPolicy", func(t *testing.T) {
		mc := newMinio(t, srv)
		p := minio.NewPostPolicy()
		must(t, p.SetBucket(bucket))
		must(t, p.SetKey("up/minio.bin"))
		must(t, p.SetExpires(time.Now().UTC().Add(10*time.Minute)))
		must(t, p.SetContentType("application/x-test"))
		must(t, p.SetContentLengthRange(1, 1<<20))
		must(t, p.SetUserMetadata("origin", "minio"))
		pu, data, err := mc.PresignedPostPolicy(ctx, p)
		must(t, err)
		var fields []formField
		for k, v := range data {
			fields = append(fields, formField{k, v})
		}
		payload := randBytes("minio", 4096)
		if st, _, body := postForm(t, pu.String(), fields, "m.bin", payload); st != http.StatusNoContent {
			t.Fatalf("%d %s", st, body)
		}
		got, out := get(t, own, bucket, "up/minio.bin")
		wantBytes(t, got, payload)
		if aws.ToString(out.ContentType) != "application/x-test" || out.Metadata["origin"] != "minio" {
			t.Fatalf("stored %q %v", aws.ToString(out.ContentType), out.Metadata)
		}
	})
}
