package e2e_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/nastest"
)

// send sends one request exactly as given (no signature: a browser's
// preflight carries none) and returns status, headers and body.
func send(t testing.TB, method, u string, hdr http.Header, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	must(t, err)
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	return do(t, req)
}

// preflightHeaders are what a browser sends before a cross-origin request.
func preflightHeaders(origin, method, headers string) http.Header {
	h := http.Header{"Origin": {origin}, "Access-Control-Request-Method": {method}}
	if headers != "" {
		h.Set("Access-Control-Request-Headers", headers)
	}
	return h
}

// putCors stores rules as bucket's CORS configuration.
func putCors(t testing.TB, c *s3.Client, bucket string, rules ...types.CORSRule) {
	t.Helper()
	_, err := c.PutBucketCors(context.Background(), &s3.PutBucketCorsInput{Bucket: aws.String(bucket),
		CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}})
	must(t, err)
}

// wantHeaders checks response headers; "" means absent.
func wantHeaders(t testing.TB, what string, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// appRule is the rule a browser app at https://app.example.com uses.
var appRule = types.CORSRule{ID: aws.String("app"), AllowedOrigins: []string{"https://app.example.com"},
	AllowedMethods: []string{"GET", "PUT"}, AllowedHeaders: []string{"content-type", "x-amz-*"},
	ExposeHeaders: []string{"ETag", "x-amz-version-id"}, MaxAgeSeconds: aws.Int32(600)}

func TestBucketCors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "corsconf"
	createBucket(t, c, b)
	bk := aws.String(b)

	_, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bk})
	wantErr(t, err, http.StatusNotFound, "NoSuchCORSConfiguration")
	wild := types.CORSRule{AllowedOrigins: []string{"http://*.example.com"}, AllowedMethods: []string{"HEAD"}}
	putCors(t, c, b, appRule, wild)
	out, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bk})
	must(t, err)
	if len(out.CORSRules) != 2 {
		t.Fatalf("GetBucketCors: %d rules", len(out.CORSRules))
	}
	got := out.CORSRules[0]
	if aws.ToString(got.ID) != "app" || !slices.Equal(got.AllowedOrigins, appRule.AllowedOrigins) ||
		!slices.Equal(got.AllowedMethods, appRule.AllowedMethods) || !slices.Equal(got.AllowedHeaders, appRule.AllowedHeaders) ||
		!slices.Equal(got.ExposeHeaders, appRule.ExposeHeaders) || aws.ToInt32(got.MaxAgeSeconds) != 600 {
		t.Errorf("first rule read back as %+v", got)
	}
	if r := out.CORSRules[1]; r.ID != nil || r.MaxAgeSeconds != nil || !slices.Equal(r.AllowedMethods, []string{"HEAD"}) {
		t.Errorf("second rule read back as %+v", r)
	}

	t.Run("Refused", func(t *testing.T) {
		put := func(rules ...types.CORSRule) error {
			_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: bk, CORSConfiguration: &types.CORSConfiguration{CORSRules: rules}})
			return err
		}
		wantErr(t, put(types.CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PATCH"}}), http.StatusBadRequest, "InvalidRequest")
		wantErr(t, put(types.CORSRule{AllowedOrigins: []string{"http://*.*.com"}, AllowedMethods: []string{"GET"}}), http.StatusBadRequest, "InvalidRequest")
		many := make([]types.CORSRule, 101)
		for i := range many {
			many[i] = types.CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET"}}
		}
		wantErr(t, put(many...), http.StatusBadRequest, "MalformedXML")
		must(t, put(many[:100]...))
		putCors(t, c, b, appRule, wild) // back to the two rules
		u := srv.Endpoint + "/" + b + "?cors="
		for _, doc := range []string{
			"<CORSConfiguration><CORSRule>",
			"<CORSConfiguration></CORSConfiguration>",
			"<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin></CORSRule></CORSConfiguration>",
			"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>",
		} {
			if st, _, body := rawDo(t, http.MethodPut, u, []byte(doc), owner, nil); st != 400 || xmlCode(body) != "MalformedXML" {
				t.Errorf("%s: %d %s", doc, st, body)
			}
		}
		big := []byte("<CORSConfiguration>" + strings.Repeat(" ", 64<<10) + "</CORSConfiguration>")
		if st, _, body := rawDo(t, http.MethodPut, u, big, owner, nil); st != 400 || xmlCode(body) != "MalformedXML" {
			t.Errorf("body over 64 KiB: %d %s", st, body)
		}
		doc := []byte("<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>")
		st, _, body := rawDo(t, http.MethodPut, u, doc, owner, http.Header{"Content-Md5": {"1B2M2Y8AsgTpgAmY7PhCfg=="}})
		if st != 400 || xmlCode(body) != "BadDigest" {
			t.Errorf("wrong Content-MD5: %d %s", st, body)
		}
		_, err := c.PutBucketCors(ctx, &s3.PutBucketCorsInput{Bucket: aws.String("nocorsbucket"),
			CORSConfiguration: &types.CORSConfiguration{CORSRules: []types.CORSRule{appRule}}})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		out, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bk})
		must(t, err)
		if len(out.CORSRules) != 2 {
			t.Errorf("a refused PUT changed the configuration: %d rules", len(out.CORSRules))
		}
	})

	t.Run("Delete", func(t *testing.T) {
		st, _, body := rawDo(t, http.MethodDelete, srv.Endpoint+"/"+b+"?cors=", nil, owner, nil)
		if st != http.StatusNoContent {
			t.Fatalf("DeleteBucketCors: %d %s", st, body)
		}
		_, err := c.GetBucketCors(ctx, &s3.GetBucketCorsInput{Bucket: bk})
		wantErr(t, err, http.StatusNotFound, "NoSuchCORSConfiguration")
		_, err = c.DeleteBucketCors(ctx, &s3.DeleteBucketCorsInput{Bucket: bk})
		must(t, err) // deleting none succeeds, as on S3
	})
}

// refusalOf is what a refused preflight tells: status, code, message and
// the names of its headers (request IDs differ, their presence does not).
func refusalOf(t testing.TB, u string, h http.Header) string {
	t.Helper()
	st, rh, body := send(t, http.MethodOptions, u, h, nil)
	_, msg, _ := strings.Cut(string(body), "<Message>")
	msg, _, _ = strings.Cut(msg, "</Message>")
	var names []string
	for k := range rh {
		if k != "Date" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return strings.Join([]string{http.StatusText(st), xmlCode(body), msg, strings.Join(names, ",")}, " | ")
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	srv := nastest.Start(t)
	c := client(t, srv)
	const b, bare = "preflight", "nocors"
	createBucket(t, c, b)
	createBucket(t, c, bare)
	secret := []byte("object bytes a preflight never shows")
	put(t, c, b, "k", secret)
	putCors(t, c, b, appRule,
		types.CORSRule{AllowedOrigins: []string{"http://*.wild.test"}, AllowedMethods: []string{"GET"}, AllowedHeaders: []string{"*"}},
		types.CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"HEAD"}})
	obj := srv.Endpoint + "/" + b + "/k"

	t.Run("Match", func(t *testing.T) {
		st, h, body := send(t, http.MethodOptions, obj, preflightHeaders("https://app.example.com", "PUT", "Content-Type, x-amz-meta-owner"), nil)
		if st != http.StatusOK || len(body) != 0 {
			t.Fatalf("preflight: %d %q", st, body)
		}
		wantHeaders(t, "preflight", h, map[string]string{
			"Access-Control-Allow-Origin":      "https://app.example.com",
			"Access-Control-Allow-Methods":     "GET, PUT",
			"Access-Control-Allow-Headers":     "content-type, x-amz-meta-owner",
			"Access-Control-Expose-Headers":    "ETag, x-amz-version-id",
			"Access-Control-Max-Age":           "600",
			"Access-Control-Allow-Credentials": "true",
			"Vary":                             "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
		})
		// The bucket itself answers the same way.
		if st, h, _ := send(t, http.MethodOptions, srv.Endpoint+"/"+b, preflightHeaders("https://app.example.com", "GET", ""), nil); st != 200 ||
			h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || h.Get("Access-Control-Allow-Headers") != "" {
			t.Errorf("bucket preflight: %d %v", st, h)
		}
	})

	t.Run("Wildcards", func(t *testing.T) {
		st, h, _ := send(t, http.MethodOptions, obj, preflightHeaders("http://a.b.wild.test", "GET", "x-anything, authorization"), nil)
		wantHeaders(t, "origin wildcard", h, map[string]string{"Access-Control-Allow-Origin": "http://a.b.wild.test",
			"Access-Control-Allow-Headers": "x-anything, authorization", "Access-Control-Max-Age": ""})
		if st != 200 {
			t.Errorf("origin wildcard: %d", st)
		}
		st, h, _ = send(t, http.MethodOptions, obj, preflightHeaders("null", "HEAD", ""), nil)
		wantHeaders(t, "any origin", h, map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": ""})
		if st != 200 {
			t.Errorf("any origin: %d", st)
		}
	})

	t.Run("RefusalsAreAlike", func(t *testing.T) {
		noMatch := refusalOf(t, obj, preflightHeaders("https://evil.example", "GET", ""))
		if !strings.HasPrefix(noMatch, "Forbidden | AccessForbidden | CORSResponse: This CORS request is not allowed.") {
			t.Fatalf("no match: %s", noMatch)
		}
		for name, u := range map[string]string{
			"bucket without cors": srv.Endpoint + "/" + bare + "/k",
			"missing bucket":      srv.Endpoint + "/missing/k",
			"invalid bucket name": srv.Endpoint + "/-x-/k",
			"branch alias":        srv.Endpoint + "/missing_dev/k",
		} {
			if got := refusalOf(t, u, preflightHeaders("https://evil.example", "GET", "")); got != noMatch {
				t.Errorf("%s: %s\nno match: %s", name, got, noMatch)
			}
		}
		for name, h := range map[string]http.Header{
			"method not allowed":   preflightHeaders("https://app.example.com", "DELETE", ""),
			"header not allowed":   preflightHeaders("https://app.example.com", "PUT", "authorization"),
			"origin case":          preflightHeaders("https://APP.example.com", "GET", ""),
			"wildcard not a match": preflightHeaders("http://wild.test", "GET", ""),
		} {
			if got := refusalOf(t, obj, h); got != noMatch {
				t.Errorf("%s: %s", name, got)
			}
		}
	})

	t.Run("NotAPreflight", func(t *testing.T) {
		for name, h := range map[string]http.Header{
			"no headers":   nil,
			"no origin":    {"Access-Control-Request-Method": {"GET"}},
			"no method":    {"Origin": {"https://app.example.com"}},
			"other method": preflightHeaders("https://app.example.com", "PATCH", ""),
		} {
			for _, u := range []string{obj, srv.Endpoint + "/" + b, srv.Endpoint + "/missing"} {
				st, _, body := send(t, http.MethodOptions, u, h, nil)
				if st != http.StatusBadRequest || xmlCode(body) != "BadRequest" {
					t.Errorf("%s at %s: %d %s", name, u, st, body)
				}
			}
		}
	})

	t.Run("NeverReachesData", func(t *testing.T) {
		bogus := preflightHeaders("https://app.example.com", "GET", "")
		bogus.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIANOBODY/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00")
		st, h, body := send(t, http.MethodOptions, obj, bogus, nil)
		if st != 200 || len(body) != 0 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || h.Get("Etag") != "" {
			t.Errorf("preflight with a bogus Authorization: %d %v %q", st, h, body)
		}
		// Signed by the owner, an OPTIONS is still only a preflight.
		for _, hdr := range []http.Header{nil, preflightHeaders("https://evil.example", "GET", "")} {
			st, h, body := rawDo(t, http.MethodOptions, obj, nil, owner, hdr)
			if st == 200 || bytes.Contains(body, secret) || h.Get("Etag") != "" {
				t.Errorf("owner-signed OPTIONS: %d %v %q", st, h, body)
			}
		}
		presign, err := s3.NewPresignClient(c).PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("k")})
		must(t, err)
		st, _, body = send(t, http.MethodOptions, presign.URL, nil, nil)
		if st != http.StatusBadRequest || bytes.Contains(body, secret) {
			t.Errorf("OPTIONS of a presigned URL without CORS headers: %d %q", st, body)
		}
	})
}

// TestCorsPresigned is a browser page at an allowed origin using
// presigned URLs: the preflight, then the PUT and GET with Origin.
func TestCorsPresigned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "page"
	createBucket(t, c, b)
	putCors(t, c, b, appRule)
	pc := s3.NewPresignClient(c)
	const origin = "https://app.example.com"
	actual := map[string]string{
		"Access-Control-Allow-Origin":      origin,
		"Access-Control-Allow-Methods":     "GET, PUT",
		"Access-Control-Expose-Headers":    "ETag, x-amz-version-id",
		"Access-Control-Allow-Credentials": "true",
		"Vary":                             "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
		"Access-Control-Allow-Headers":     "",
	}

	pp, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("upload.txt")})
	must(t, err)
	st, h, _ := send(t, http.MethodOptions, pp.URL, preflightHeaders(origin, "PUT", "content-type"), nil)
	if st != http.StatusOK {
		t.Fatalf("preflight of the presigned PUT: %d", st)
	}
	wantHeaders(t, "preflight", h, map[string]string{"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Headers": "content-type"})

	body := []byte("uploaded from a page")
	st, h, resp := send(t, http.MethodPut, pp.URL, http.Header{"Origin": {origin}, "Content-Type": {"text/plain"}}, body)
	if st != http.StatusOK {
		t.Fatalf("presigned PUT with Origin: %d %s", st, resp)
	}
	wantHeaders(t, "presigned PUT", h, actual)
	if h.Get("Etag") != etagOf(body) {
		t.Errorf("presigned PUT ETag %q", h.Get("Etag"))
	}

	pg, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("upload.txt")})
	must(t, err)
	st, h, got := send(t, http.MethodGet, pg.URL, http.Header{"Origin": {origin}}, nil)
	if st != 200 || !bytes.Equal(got, body) {
		t.Fatalf("presigned GET: %d %q", st, got)
	}
	wantHeaders(t, "presigned GET", h, actual)

	// Errors carry the headers too, so the page can read them.
	pm, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("missing")})
	must(t, err)
	st, h, resp = send(t, http.MethodGet, pm.URL, http.Header{"Origin": {origin}}, nil)
	if st != http.StatusNotFound || xmlCode(resp) != "NoSuchKey" {
		t.Fatalf("presigned GET of a missing key: %d %s", st, resp)
	}
	wantHeaders(t, "NoSuchKey", h, actual)
	st, h, _ = send(t, http.MethodGet, pg.URL+"0", http.Header{"Origin": {origin}}, nil) // signature broken
	if st < 400 || h.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("refused at the door: %d %v", st, h)
	}

	// Another origin, or no Origin, gets no CORS headers.
	for _, hdr := range []http.Header{{"Origin": {"https://evil.example"}}, nil} {
		st, h, _ := send(t, http.MethodGet, pg.URL, hdr, nil)
		if st != 200 || h.Get("Access-Control-Allow-Origin") != "" || h.Get("Vary") != "" {
			t.Errorf("GET with %v: %d %v", hdr, st, h)
		}
	}
	// A method the rule does not allow gets none either.
	pd, err := pc.PresignDeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("other")})
	must(t, err)
	if st, h, _ := send(t, http.MethodDelete, pd.URL, http.Header{"Origin": {origin}}, nil); st != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("DELETE with Origin: %d %v", st, h)
	}
}

// TestSubresourceOfTheOtherTarget: ?cors on an object and ?attributes on a
// bucket are refused, never served as the plain object or bucket call
// (which would overwrite the object with the CORS document, or delete the
// bucket).
func TestSubresourceOfTheOtherTarget(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	createBucket(t, c, "sub")
	put(t, c, "sub", "k", []byte("keep me"))
	for _, r := range []struct{ method, path string }{
		{http.MethodPut, "/sub/k?cors"}, {http.MethodDelete, "/sub/k?cors"}, {http.MethodGet, "/sub/k?cors"},
		{http.MethodDelete, "/sub?attributes"}, {http.MethodPut, "/sub?attributes"},
	} {
		st, _, body := do(t, rawRequest(t, r.method, srv.Endpoint+r.path, []byte("<CORSConfiguration/>"), time.Now(), owner, nil))
		if st != http.StatusBadRequest || xmlCode(body) != "InvalidRequest" {
			t.Errorf("%s %s: %d %s", r.method, r.path, st, body)
		}
	}
	if got, _ := get(t, c, "sub", "k"); string(got) != "keep me" {
		t.Fatalf("object changed: %q", got)
	}
}
