package cors

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Request is what a browser's request asks of a bucket's CORS.
type Request struct {
	Origin string // the Origin header, compared case-sensitively
	Method string // the method the page wants to use
	// Headers are the request headers a preflight asks about
	// (Access-Control-Request-Headers), as RequestHeaders splits them.
	Headers []string
}

// Match is the rule that admitted a request, and what to answer.
type Match struct {
	Rule *Rule
	// AllowOrigin is the Access-Control-Allow-Origin value: "*" when the
	// rule's matching origin is the bare wildcard, else the request's
	// origin.
	AllowOrigin string
	// Headers are the requested headers, every one of them allowed.
	Headers []string
}

// vary is S3's Vary header on every CORS answer: caches must key on all
// three.
const vary = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method"

// RequestHeaders splits an Access-Control-Request-Headers value into
// lower-case names, dropping empty ones.
func RequestHeaders(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.ToLower(strings.TrimSpace(f)); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Match returns the first rule of c that admits req: one of its origins
// matches, it allows the method, and every requested header matches one
// of its allowed headers. A nil Config admits nothing.
func (c *Config) Match(req Request) (*Match, bool) {
	if c == nil || req.Origin == "" {
		return nil, false
	}
	for i := range c.Rules {
		if m, ok := c.Rules[i].match(req); ok {
			return m, true
		}
	}
	return nil, false
}

// match reports whether r admits req.
func (r *Rule) match(req Request) (*Match, bool) {
	origin := ""
	for _, o := range r.AllowedOrigins {
		if wildcard(o, req.Origin) {
			origin = req.Origin
			if o == "*" {
				origin = "*"
			}
			break
		}
	}
	if origin == "" || !slices.Contains(r.AllowedMethods, req.Method) {
		return nil, false
	}
	for _, h := range req.Headers {
		if !r.allowsHeader(h) {
			return nil, false
		}
	}
	return &Match{Rule: r, AllowOrigin: origin, Headers: req.Headers}, true
}

// allowsHeader reports whether the lower-case header name h matches one
// of r's allowed headers, which match case-insensitively.
func (r *Rule) allowsHeader(h string) bool {
	for _, a := range r.AllowedHeaders {
		if wildcard(strings.ToLower(a), h) {
			return true
		}
	}
	return false
}

// wildcard reports whether s matches pattern, whose one "*" (if any)
// stands for any run of bytes, the empty one included.
func wildcard(pattern, s string) bool {
	prefix, suffix, ok := strings.Cut(pattern, "*")
	if !ok {
		return pattern == s
	}
	return len(s) >= len(prefix)+len(suffix) && strings.HasPrefix(s, prefix) && strings.HasSuffix(s, suffix)
}

// Preflight sets the headers of a successful preflight's answer.
func (m *Match) Preflight(h http.Header) {
	m.Actual(h)
	if len(m.Headers) > 0 {
		h.Set("Access-Control-Allow-Headers", strings.Join(m.Headers, ", "))
	}
	if m.Rule.MaxAgeSeconds != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(*m.Rule.MaxAgeSeconds))
	}
}

// Actual sets the headers S3 adds to the answer of an admitted request
// itself, an error included, so the page can read it.
func (m *Match) Actual(h http.Header) {
	h.Set("Access-Control-Allow-Origin", m.AllowOrigin)
	h.Set("Access-Control-Allow-Methods", strings.Join(m.Rule.AllowedMethods, ", "))
	if len(m.Rule.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(m.Rule.ExposeHeaders, ", "))
	}
	if m.AllowOrigin != "*" {
		// The page may send credentials: the answer names its origin.
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	h.Set("Vary", vary)
}
