package sigv4

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

const sig64 = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"

func TestParseAuthorization(t *testing.T) {
	cred := "Credential=AKID/20130524/us-east-1/s3/aws4_request"
	tests := []struct {
		name string
		in   string
		ak   string
		hdrs []string
		err  error
	}{
		{"usual", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;x-amz-date, Signature=" + sig64, "AKID", []string{"host", "x-amz-date"}, nil},
		{"no spaces", "AWS4-HMAC-SHA256 " + cred + ",SignedHeaders=host,Signature=" + sig64, "AKID", []string{"host"}, nil},
		{"reordered", "AWS4-HMAC-SHA256 Signature=" + sig64 + ", SignedHeaders=host, " + cred, "AKID", []string{"host"}, nil},
		{"tabs and trailing comma", "AWS4-HMAC-SHA256\t" + cred + ",\tSignedHeaders=Host;Range,Signature=" + sig64 + ",", "AKID", []string{"host", "range"}, nil},
		{"slash in access key", "AWS4-HMAC-SHA256 Credential=a/b/20130524/r/s3/aws4_request, SignedHeaders=host, Signature=" + sig64, "a/b", []string{"host"}, nil},
		{"sigv2", "AWS AKID:c2ln", "", nil, ErrUnsupportedAuth},
		{"sigv4a", "AWS4-ECDSA-P256-SHA256 " + cred, "", nil, ErrUnsupportedAuth},
		{"bearer", "Bearer abc", "", nil, ErrUnsupportedAuth},
		{"empty", "", "", nil, ErrMalformedAuth},
		{"algorithm glued", "AWS4-HMAC-SHA256Credential=x", "", nil, ErrUnsupportedAuth},
		{"missing signature", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host", "", nil, ErrMalformedAuth},
		{"missing credential", "AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"duplicate field", "AWS4-HMAC-SHA256 " + cred + ", " + cred + ", SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"unknown field", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host, Signature=" + sig64 + ", Foo=bar", "", nil, ErrMalformedAuth},
		{"no equals", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"short signature", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host, Signature=abc", "", nil, ErrMalformedAuth},
		{"non-hex signature", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host, Signature=" + strings.Repeat("g", 64), "", nil, ErrMalformedAuth},
		{"host unsigned", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=x-amz-date, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"empty header name", "AWS4-HMAC-SHA256 " + cred + ", SignedHeaders=host;;x, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"bad terminator", "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws5_request, SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"short credential", "AWS4-HMAC-SHA256 Credential=AKID/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"bad date", "AWS4-HMAC-SHA256 Credential=AKID/20131324/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"empty region", "AWS4-HMAC-SHA256 Credential=AKID/20130524//s3/aws4_request, SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
		{"empty key", "AWS4-HMAC-SHA256 Credential=/20130524/r/s3/aws4_request, SignedHeaders=host, Signature=" + sig64, "", nil, ErrMalformedAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := parseAuthorization(tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if a.cred.accessKey != tt.ak || !reflect.DeepEqual(a.headers, tt.hdrs) {
				t.Fatalf("got %+v", a)
			}
		})
	}
}

func TestCanonicalQuery(t *testing.T) {
	tests := []struct {
		raw, want string
	}{
		{"", ""},
		{"uploads", "uploads="},
		{"b=2&a=1", "a=1&b=2"},
		{"a=2&a=10&a=1", "a=1&a=10&a=2"},
		{"prefix=a+b", "prefix=a%20b"},
		{"prefix=a%2bb", "prefix=a%2Bb"},
		{"x=%7e~", "x=~~"},
		{"x=%zz", "x=%25zz"},
		{"k=v=w", "k=v%3Dw"},
		{"&&a=1&", "a=1"},
		{"é=ü", "%C3%A9=%C3%BC"},
		{"a;b=1", "a%3Bb=1"},
		{"X-Amz-Signature=abc&z=1", "X-Amz-Signature=abc&z=1"},
	}
	for _, tt := range tests {
		if got := string(canonicalQuery(nil, parseQuery(tt.raw), false)); got != tt.want {
			t.Errorf("canonicalQuery(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
	if got := string(canonicalQuery(nil, parseQuery("X-Amz-Signature=abc&z=1"), true)); got != "z=1" {
		t.Errorf("presigned canonical query kept the signature: %q", got)
	}
}

func TestAppendTrimmed(t *testing.T) {
	for in, want := range map[string]string{
		"":               "",
		"  a  ":          "a",
		"a   b c":        "a b c",
		"\ta  b\t":       "a b",
		"x\t\ty":         "x\t\ty",
		"   ":            "",
		"one two  three": "one two three",
	} {
		if got := string(appendTrimmed(nil, in)); got != want {
			t.Errorf("appendTrimmed(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStripAWSChunked(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"aws-chunked"}, ""},
		{[]string{"aws-chunked,gzip"}, "gzip"},
		{[]string{"gzip", "AWS-Chunked"}, "gzip"},
		{[]string{"gzip, br"}, "gzip,br"},
	} {
		if got := stripAWSChunked(tt.in); got != tt.want {
			t.Errorf("stripAWSChunked(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestKeyCacheBounded(t *testing.T) {
	var c keyCache
	for i := range keyCacheSize + 10 {
		k := c.get("secret", "20250314", "r"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26), "s3")
		if len(k) != 32 {
			t.Fatal("bad key")
		}
	}
	if len(c.m) > keyCacheSize {
		t.Fatalf("cache holds %d keys", len(c.m))
	}
	a := c.get("s", "20250314", "r", "s3")
	if string(a) != string(SigningKey("s", "20250314", "r", "s3")) {
		t.Fatal("cached key differs")
	}
}

// TestRequestDateForms: a header-signed request may be dated by
// X-Amz-Date or by Date in any HTTP form, including the numeric "-0000"
// zone Python's email.utils writes (botocore signs with it when a Date
// header is set).
func TestRequestDateForms(t *testing.T) {
	want := time.Date(2026, 12, 2, 1, 49, 13, 0, time.UTC)
	for _, tc := range []struct{ name, value string }{
		{"X-Amz-Date", "20261202T014913Z"},
		{"Date", "Wed, 02 Dec 2026 01:49:13 GMT"},
		{"Date", "Wed, 02 Dec 2026 01:49:13 -0000"},
		{"Date", "Wed, 02 Dec 2026 02:49:13 +0100"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set(tc.name, tc.value)
		got, err := requestDate(r)
		if err != nil || !got.Equal(want) {
			t.Errorf("%s: %q = %v, %v", tc.name, tc.value, got, err)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Date", "yesterday")
	if _, err := requestDate(r); !errors.Is(err, ErrMissingDate) {
		t.Errorf("bad Date: %v", err)
	}
}
