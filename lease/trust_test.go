package lease

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseClaimCondition(t *testing.T) {
	for in, ok := range map[string]bool{
		"repository=org/repo":           true,
		"ref=refs/heads/*":              true,
		"job_workflow_ref=a=b":          true, // split at the first '='
		"email_verified=true":           true,
		"noequals":                      false,
		"=value":                        false,
		"repository=":                   false,
		"sub=repo:*":                    false, // use --oidc-subject
		"aud=x":                         false,
		"exp=1":                         false,
		"has space=x":                   false,
		"claim=bad\x00byte":             false,
		"claim=\xff":                    false,
		strings.Repeat("c", 129) + "=x": false,
	} {
		c, err := ParseClaimCondition(in)
		if (err == nil) != ok {
			t.Errorf("ParseClaimCondition(%q): %v", in, err)
		}
		if err == nil && c.String() != in {
			t.Errorf("ParseClaimCondition(%q).String() = %q", in, c.String())
		}
	}
}

func TestMatchLike(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "repo:org/x:ref:refs/heads/main", true},
		{"repo:org/x:*", "repo:org/x:ref:refs/heads/main", true},
		{"repo:org/x:*", "repo:org/xy:ref:refs/heads/main", false},
		{"system:serviceaccount:etl:*", "system:serviceaccount:etl:loader", true},
		{"system:serviceaccount:etl:*", "system:serviceaccount:etl2:loader", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"**", "anything", true},
		{"é?", "éü", true},
	} {
		if got := MatchLike(tc.p, tc.s); got != tc.want {
			t.Errorf("MatchLike(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

func TestClaimMatches(t *testing.T) {
	c := ClaimCondition{Claim: "x", Pattern: "ma*"}
	for raw, want := range map[string]bool{
		`"main"`:         true,
		`"dev"`:          false,
		`["dev","main"]`: true,
		`["dev"]`:        false,
		`{"a":"main"}`:   false,
		`null`:           false,
		"":               false,
	} {
		if got := c.Matches(json.RawMessage(raw)); got != want {
			t.Errorf("%s: %v", raw, got)
		}
	}
	if !(ClaimCondition{Claim: "v", Pattern: "true"}).Matches(json.RawMessage(`true`)) {
		t.Error("boolean claims match their JSON text")
	}
	if (ClaimCondition{Claim: "v", Pattern: "true"}).Matches(json.RawMessage(`"TRUE"`)) {
		t.Error("matching is case-sensitive")
	}
}

func TestTrustNamesSomeone(t *testing.T) {
	base := OIDCTrust{Issuer: "https://token.actions.githubusercontent.com", Audience: "sts.amazonaws.com"}
	for _, tc := range []struct {
		subject string
		claims  []ClaimCondition
		ok      bool
	}{
		{"", nil, false},
		{"*", nil, false},
		{"*?*", nil, false},
		{"repo:org/app:*", nil, true},
		{"", []ClaimCondition{{Claim: "repository_owner", Pattern: "org"}}, true},
	} {
		tr := base
		tr.Subject, tr.Claims = tc.subject, tc.claims
		if err := tr.Validate(); (err == nil) != tc.ok {
			t.Errorf("subject %q claims %v: %v", tc.subject, tc.claims, err)
		}
	}
}

func TestValidIssuer(t *testing.T) {
	for in, ok := range map[string]bool{
		"https://token.actions.githubusercontent.com":     true,
		"https://oidc.eks.eu-west-1.amazonaws.com/id/ABC": true,
		"http://127.0.0.1:8080":                           true,
		"http://localhost/x":                              true,
		"http://example.com":                              false,
		"https://user@example.com":                        false,
		"https://example.com?x=1":                         false,
		"https://example.com#f":                           false,
		"example.com":                                     false,
		"":                                                false,
		"file:///etc/passwd":                              false,
	} {
		if err := ValidIssuer(in); (err == nil) != ok {
			t.Errorf("ValidIssuer(%q): %v", in, err)
		}
	}
}

// FuzzParseClaimCondition: parsing never panics, what it accepts is valid
// and reads back the same, and matching a pattern against anything ends.
func FuzzParseClaimCondition(f *testing.F) {
	for _, s := range []string{"repository=org/repo", "ref=refs/heads/*", "a=b=c", "=", "x=*?*?*", "sub=x", "k=\xff"} {
		f.Add(s, "refs/heads/main")
	}
	f.Fuzz(func(t *testing.T, in, value string) {
		c, err := ParseClaimCondition(in)
		if err != nil {
			return
		}
		if c.Validate() != nil {
			t.Fatalf("accepted an invalid condition %q", in)
		}
		back, err := ParseClaimCondition(c.String())
		if err != nil || back != c {
			t.Fatalf("%q does not read back: %v %v", in, back, err)
		}
		raw, _ := json.Marshal(value)
		var decoded string // what a token would carry: invalid UTF-8 replaced
		_ = json.Unmarshal(raw, &decoded)
		if len(raw) <= MaxClaimValue && c.Matches(raw) != MatchLike(c.Pattern, decoded) {
			t.Fatalf("a string claim matches as its pattern does: %q %q", c.Pattern, value)
		}
	})
}

// FuzzMatchLike: a pattern without wildcards matches exactly itself, and
// "*" + s + "*" matches anything holding s.
func FuzzMatchLike(f *testing.F) {
	f.Add("repo:org/*", "repo:org/x")
	f.Add("a?c*", "abcdef")
	f.Fuzz(func(t *testing.T, p, s string) {
		got := MatchLike(p, s)
		if !utf8.ValidString(p) || !utf8.ValidString(s) {
			if got {
				t.Fatalf("invalid UTF-8 matched: %q %q", p, s)
			}
			return
		}
		if !strings.ContainsAny(p, "*?") && got != (p == s) {
			t.Fatalf("literal %q vs %q: %v", p, s, got)
		}
		if !strings.ContainsAny(s, "*?") && !MatchLike("*"+s+"*", p+s+p) {
			t.Fatalf("*%s* does not match %q", s, p+s+p)
		}
	})
}
