package cors

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
)

// S3's limits on a CORSConfiguration.
const (
	// MaxRules is how many rules a configuration may hold.
	MaxRules = 100
	// MaxIDLen is the longest rule ID, in bytes.
	MaxIDLen = 255
)

// Methods are the methods a rule may allow, as S3 spells them.
var Methods = []string{"GET", "PUT", "POST", "DELETE", "HEAD"}

// Config is a bucket's CORSConfiguration document. Xmlns is set only on
// the way out to a client; Encode leaves it out.
type Config struct {
	XMLName xml.Name `xml:"CORSConfiguration"`
	Xmlns   string   `xml:"xmlns,attr,omitempty"`
	Rules   []Rule   `xml:"CORSRule"`
}

// Rule is one CORSRule: which origins may use which methods, with which
// request headers, and what the browser may show the page.
type Rule struct {
	ID             string   `xml:"ID,omitempty"`
	AllowedOrigins []string `xml:"AllowedOrigin"`
	AllowedMethods []string `xml:"AllowedMethod"`
	AllowedHeaders []string `xml:"AllowedHeader,omitempty"`
	ExposeHeaders  []string `xml:"ExposeHeader,omitempty"`
	// MaxAgeSeconds is how long a browser may cache a preflight's answer;
	// nil when the rule does not say.
	MaxAgeSeconds *int `xml:"MaxAgeSeconds,omitempty"`
}

// Decode reads and checks a CORSConfiguration document as S3 does: it
// answers ErrMalformed for what the schema refuses and ErrInvalid (in a
// *RuleError) for values S3 refuses.
func Decode(b []byte) (*Config, error) {
	var c Config
	if err := xml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c.Xmlns = ""
	if len(c.Rules) == 0 || len(c.Rules) > MaxRules {
		return nil, malformed(fmt.Sprintf("a CORSConfiguration holds 1 to %d rules, not %d", MaxRules, len(c.Rules)))
	}
	for i := range c.Rules {
		if err := c.Rules[i].check(); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// check checks one rule.
func (r *Rule) check() error {
	if len(r.AllowedOrigins) == 0 || len(r.AllowedMethods) == 0 {
		return malformed("every CORSRule needs an AllowedOrigin and an AllowedMethod")
	}
	if r.MaxAgeSeconds != nil && *r.MaxAgeSeconds < 0 {
		return malformed("MaxAgeSeconds cannot be negative")
	}
	if len(r.ID) > MaxIDLen {
		return invalid(fmt.Sprintf("The ID of a CORSRule can be at most %d characters long", MaxIDLen))
	}
	for _, m := range r.AllowedMethods {
		if !slices.Contains(Methods, m) {
			return invalid("Found unsupported HTTP method in CORS config. Unsupported method is " + m)
		}
	}
	for _, o := range r.AllowedOrigins {
		if strings.Count(o, "*") > 1 {
			return invalid(fmt.Sprintf("AllowedOrigin %q can not have more than one wildcard.", o))
		}
	}
	for _, h := range r.AllowedHeaders {
		if strings.Count(h, "*") > 1 {
			return invalid(fmt.Sprintf("AllowedHeader %q can not have more than one wildcard.", h))
		}
	}
	return nil
}

// Encode returns c's canonical document: no namespace, no XML
// declaration, the fields in schema order. Decode(Encode(c)) gives c
// back.
func (c *Config) Encode() ([]byte, error) {
	out := *c
	out.Xmlns = ""
	var buf bytes.Buffer
	if err := xml.NewEncoder(&buf).Encode(&out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
