package cors

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "http://a.example.com", true},
		{"http://a.com", "http://a.com", true},
		{"http://a.com", "http://A.com", false}, // origins are case-sensitive
		{"http://a.com", "http://a.com:80", false},
		{"http://*.example.com", "http://www.example.com", true},
		{"http://*.example.com", "http://.example.com", true},
		{"http://*.example.com", "http://example.com", false},
		{"http://*.example.com", "https://www.example.com", false},
		{"http://*.example.com", "http://www.example.com.evil", false},
		{"*suffix", "foo.suffix", true},
		{"*suffix", "foo.suffix.get", false},
		{"start*end", "startend", true},
		{"start*end", "start12end", true},
		{"start*end", "0start12end", false},
		{"start*end", "startend0", false},
		{"ab*ba", "aba", false}, // prefix and suffix may not overlap
		{"prefix*", "prefix", true},
		{"prefix*", "bla.prefix", false},
	} {
		if got := wildcard(tc.pattern, tc.s); got != tc.want {
			t.Errorf("wildcard(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func age(n int) *int { return &n }

func TestMatch(t *testing.T) {
	c := &Config{Rules: []Rule{
		{ID: "put", AllowedOrigins: []string{"https://app.example.com"}, AllowedMethods: []string{"PUT", "POST"},
			AllowedHeaders: []string{"Content-Type", "x-amz-*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: age(600)},
		{ID: "any-get", AllowedOrigins: []string{"*"}, AllowedMethods: []string{"GET", "HEAD"}},
		{ID: "second-put", AllowedOrigins: []string{"https://*.example.com"}, AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"*"}},
	}}
	for _, tc := range []struct {
		name    string
		req     Request
		rule    string // "" means no match
		allowed string
	}{
		{"exact origin and method", Request{Origin: "https://app.example.com", Method: "PUT"}, "put", "https://app.example.com"},
		{"header by name, any case", Request{Origin: "https://app.example.com", Method: "PUT", Headers: RequestHeaders("content-type")}, "put", "https://app.example.com"},
		{"header by wildcard", Request{Origin: "https://app.example.com", Method: "POST", Headers: RequestHeaders("X-Amz-Meta-A, content-type")}, "put", "https://app.example.com"},
		{"a header the first rule refuses falls to the next", Request{Origin: "https://app.example.com", Method: "PUT", Headers: []string{"authorization"}}, "second-put", "https://app.example.com"},
		{"wildcard origin answers *", Request{Origin: "http://anyone", Method: "GET"}, "any-get", "*"},
		{"wildcard rule refuses headers it does not name", Request{Origin: "http://anyone", Method: "GET", Headers: []string{"x-amz-meta-a"}}, "", ""},
		{"method case matters", Request{Origin: "http://anyone", Method: "get"}, "", ""},
		{"no method", Request{Origin: "https://app.example.com", Method: "DELETE"}, "", ""},
		{"no origin", Request{Method: "GET"}, "", ""},
		{"subdomain wildcard", Request{Origin: "https://b.example.com", Method: "PUT", Headers: []string{"anything"}}, "second-put", "https://b.example.com"},
	} {
		m, ok := c.Match(tc.req)
		switch {
		case ok != (tc.rule != ""):
			t.Errorf("%s: matched %v, want rule %q", tc.name, ok, tc.rule)
		case ok && (m.Rule.ID != tc.rule || m.AllowOrigin != tc.allowed):
			t.Errorf("%s: rule %q origin %q, want %q %q", tc.name, m.Rule.ID, m.AllowOrigin, tc.rule, tc.allowed)
		}
	}
	if _, ok := (*Config)(nil).Match(Request{Origin: "x", Method: "GET"}); ok {
		t.Error("a nil Config matched")
	}
}

func TestHeaders(t *testing.T) {
	c := &Config{Rules: []Rule{{AllowedOrigins: []string{"https://app"}, AllowedMethods: []string{"GET", "PUT"},
		AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag", "x-amz-version-id"}, MaxAgeSeconds: age(0)}}}
	m, ok := c.Match(Request{Origin: "https://app", Method: "PUT", Headers: RequestHeaders(" Content-Type ,,x-amz-date")})
	if !ok {
		t.Fatal("no match")
	}
	h := http.Header{}
	m.Preflight(h)
	want := map[string]string{
		"Access-Control-Allow-Origin":      "https://app",
		"Access-Control-Allow-Methods":     "GET, PUT",
		"Access-Control-Allow-Headers":     "content-type, x-amz-date",
		"Access-Control-Expose-Headers":    "ETag, x-amz-version-id",
		"Access-Control-Max-Age":           "0",
		"Access-Control-Allow-Credentials": "true",
		"Vary":                             vary,
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("preflight %s: %q, want %q", k, got, v)
		}
	}
	h = http.Header{}
	m.Actual(h)
	if h.Get("Access-Control-Allow-Headers") != "" || h.Get("Access-Control-Max-Age") != "" || h.Get("Access-Control-Allow-Origin") != "https://app" {
		t.Errorf("actual answer: %v", h)
	}
	star := &Match{Rule: &Rule{AllowedMethods: []string{"GET"}}, AllowOrigin: "*"}
	h = http.Header{}
	star.Actual(h)
	if h.Get("Access-Control-Allow-Credentials") != "" {
		t.Error("a * answer allows credentials")
	}
}

func TestDecode(t *testing.T) {
	rule := func(body string) string {
		return `<CORSConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><CORSRule>` + body + `</CORSRule></CORSConfiguration>`
	}
	ok := `<AllowedOrigin>*</AllowedOrigin><AllowedMethod>GET</AllowedMethod>`
	for _, tc := range []struct {
		name string
		doc  string
		want error // nil: accepted
	}{
		{"minimal", rule(ok), nil},
		{"full", rule(`<ID>r1</ID><AllowedOrigin>http://*.a.com</AllowedOrigin><AllowedMethod>PUT</AllowedMethod><AllowedHeader>x-amz-*</AllowedHeader><ExposeHeader>ETag</ExposeHeader><MaxAgeSeconds>3000</MaxAgeSeconds>`), nil},
		{"not xml", "<CORSConfiguration>", ErrMalformed},
		{"other root", "<Tagging></Tagging>", ErrMalformed},
		{"no rules", "<CORSConfiguration></CORSConfiguration>", ErrMalformed},
		{"no origin", rule(`<AllowedMethod>GET</AllowedMethod>`), ErrMalformed},
		{"no method", rule(`<AllowedOrigin>*</AllowedOrigin>`), ErrMalformed},
		{"bad max age", rule(ok + `<MaxAgeSeconds>soon</MaxAgeSeconds>`), ErrMalformed},
		{"negative max age", rule(ok + `<MaxAgeSeconds>-1</MaxAgeSeconds>`), ErrMalformed},
		{"unsupported method", rule(`<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>`), ErrInvalid},
		{"lower-case method", rule(`<AllowedOrigin>*</AllowedOrigin><AllowedMethod>get</AllowedMethod>`), ErrInvalid},
		{"two origin wildcards", rule(`<AllowedOrigin>http://*.*.com</AllowedOrigin><AllowedMethod>GET</AllowedMethod>`), ErrInvalid},
		{"two header wildcards", rule(ok + `<AllowedHeader>x-*-*</AllowedHeader>`), ErrInvalid},
		{"long id", rule(ok + `<ID>` + strings.Repeat("i", MaxIDLen+1) + `</ID>`), ErrInvalid},
		{"101 rules", "<CORSConfiguration>" + strings.Repeat("<CORSRule>"+ok+"</CORSRule>", MaxRules+1) + "</CORSConfiguration>", ErrMalformed},
		{"100 rules", "<CORSConfiguration>" + strings.Repeat("<CORSRule>"+ok+"</CORSRule>", MaxRules) + "</CORSConfiguration>", nil},
	} {
		c, err := Decode([]byte(tc.doc))
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		case tc.want == nil:
			roundTrip(t, c)
		}
	}
	var re *RuleError
	_, err := Decode([]byte(rule(`<AllowedOrigin>*</AllowedOrigin><AllowedMethod>PATCH</AllowedMethod>`)))
	if !errors.As(err, &re) || re.Reason != "Found unsupported HTTP method in CORS config. Unsupported method is PATCH" {
		t.Errorf("reason: %v", err)
	}
}

// roundTrip checks that c's canonical form decodes to the same canonical
// form.
func roundTrip(t testing.TB, c *Config) {
	t.Helper()
	b, err := c.Encode()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if strings.Contains(string(b), "xmlns") {
		t.Fatalf("canonical form keeps a namespace: %s", b)
	}
	c2, err := Decode(b)
	if err != nil {
		t.Fatalf("decode of %s: %v", b, err)
	}
	b2, err := c2.Encode()
	if err != nil || string(b2) != string(b) {
		t.Fatalf("round trip: %s, then %s (%v)", b, b2, err)
	}
}
