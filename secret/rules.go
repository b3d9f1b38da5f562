package secret

import (
	"bytes"
	"regexp"
)

// rule is one kind of credential. A match needs one of its triggers and
// then its expression on the window around the trigger; keyed rules
// (assignments) first ask keyed whether the name before the separator
// ends in one of their keywords, which rejects most "=" and ":" cheaply.
type rule struct {
	name     string
	re       *regexp.Regexp
	keywords []string // normalized (lower case, no "_" or "-") name endings; nil for literal rules
	value    int      // submatch holding the value to test for placeholders; 0 for none
	bit      uint64   // the rule's bit in a found set, 1<<(index in rules)
}

// trigger ties a literal of a rule to the byte the scanner searches for:
// lit starts off bytes before that byte.
type trigger struct {
	lit  string
	off  int
	rule *rule
}

// Window sizes around a trigger byte: WindowLeft covers the key name of
// an assignment or the "-----BEGIN OPENSSH " before "PRIVATE KEY";
// WindowRight the longest token the rules need to see.
const (
	WindowLeft  = 64
	WindowRight = 512
)

// valueChars are the bytes of a quoted value: no space, quote,
// backslash, or the $ { } < > of references and placeholders.
// bareChars are those of an unquoted one: base64 and hex, not the dots
// and parentheses of an expression such as `Key: k.secretFor(id)`.
const (
	valueChars = `[A-Za-z0-9!#%&()*+,./:;=?@^_|~-]`
	bareChars  = `[A-Za-z0-9+/=_-]`
)

// assign is the separator of an assignment in code, configuration and
// JSON: "=", ":=", ":" or "=>", with optional spaces.
const assign = `["']?[ \t]*(?::=|=>|=|:)[ \t]*`

var (
	awsKeyID = &rule{name: "aws-access-key-id",
		re: regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)}
	awsSecret = &rule{name: "aws-secret-access-key",
		re:       regexp.MustCompile(`(?i)secret[_-]?access[_-]?key` + assign + `["']?[A-Za-z0-9/+]{40}(?:[^A-Za-z0-9/+=]|$)`),
		keywords: []string{"secretaccesskey"}}
	privateKey = &rule{name: "private-key",
		re: regexp.MustCompile(`-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----`)}
	github = &rule{name: "github-token",
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)}
	slack = &rule{name: "slack-token",
		re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,250}`)}
	stripe = &rule{name: "stripe-live-key",
		re: regexp.MustCompile(`\b[rs]k_live_[A-Za-z0-9]{24,247}\b`)}
	google = &rule{name: "google-api-key",
		re: regexp.MustCompile(`\bAIza[A-Za-z0-9_-]{35}(?:[^A-Za-z0-9_-]|$)`)}
	jwt = &rule{name: "jwt",
		re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}`)}
	nasMCP = &rule{name: "nas-mcp-token",
		re: regexp.MustCompile(`\bnasmcp_[A-Za-z0-9_-]{43}(?:[^A-Za-z0-9_-]|$)`)}
	generic = &rule{name: "generic-assignment",
		re: regexp.MustCompile(`(?i)(?:password|passwd|secret|secret[_-]?key|api[_-]?key|access[_-]?key|token)` + assign +
			`("` + valueChars + `{8,128}"|'` + valueChars + `{8,128}'|` + bareChars + `{24,128}(?:[\s,;]|$))`),
		keywords: []string{"password", "passwd", "secret", "secretkey", "apikey", "accesskey", "token"},
		value:    1}
)

// rules are all rules, in the order of the package documentation.
var rules = []*rule{awsKeyID, awsSecret, privateKey, github, slack, stripe, google, jwt, nasMCP, generic}

func init() {
	for i, r := range rules {
		r.bit = 1 << i
	}
}

// triggers maps each searched byte to the literals that contain it. The
// bytes are chosen to be rare in prose and code ("I" of AKIA, "z" of
// AIza, "J" of eyJ, "_" of most token prefixes), so IndexByte skips most
// input; "=" and ":" are common in code and are filtered by the key name.
var triggers = map[byte][]trigger{
	'I': {{"AKIA", 2, awsKeyID}, {"ASIA", 2, awsKeyID}},
	'V': {{"PRIVATE KEY", 3, privateKey}},
	'_': {{"ghp_", 3, github}, {"gho_", 3, github}, {"ghu_", 3, github}, {"ghs_", 3, github}, {"ghr_", 3, github},
		{"github_pat_", 6, github}, {"sk_live_", 2, stripe}, {"rk_live_", 2, stripe}, {"nasmcp_", 6, nasMCP}},
	'x': {{"xox", 0, slack}},
	'z': {{"AIza", 2, google}},
	'J': {{"eyJ", 2, jwt}},
	'=': {{"=", 0, awsSecret}, {"=", 0, generic}},
	':': {{":", 0, awsSecret}, {":", 0, generic}},
}

// triggerBytes lists the keys of triggers in a fixed order, so scanning
// is deterministic.
var triggerBytes = []byte("IV_xzJ=:")

// Rules returns the names of all rules, in the order of the package
// documentation.
func Rules() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

// keyed reports whether the name before the separator at j in buf
// (looking no further left than lo) ends in one of keywords, ignoring
// case, "_" and "-". It skips a ":" of ":=", spaces and one closing
// quote, so `token = `, `"token": ` and `Token:=` all give "token".
func keyed(buf []byte, lo, j int, keywords []string) bool {
	k := j - 1
	if buf[j] == '=' && k >= lo && buf[k] == ':' {
		k--
	}
	for n := 0; k >= lo && n < 8 && (buf[k] == ' ' || buf[k] == '\t'); n++ {
		k--
	}
	if k >= lo && (buf[k] == '"' || buf[k] == '\'') {
		k--
	}
	var name [24]byte
	n := len(name)
	for ; k >= lo && n > 0 && isNameByte(buf[k]); k-- {
		c := buf[k]
		if c == '_' || c == '-' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		n--
		name[n] = c
	}
	for _, kw := range keywords {
		if bytes.HasSuffix(name[n:], []byte(kw)) {
			return true
		}
	}
	return false
}

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// placeholders are pieces of values that documentation uses in place of a
// real secret.
var placeholders = [][]byte{[]byte("example"), []byte("your"), []byte("xxxx"), []byte("****"), []byte("...")}

// plausible reports whether the value v of an assignment could be a
// secret: it has a letter and a digit (which rejects names such as
// "ExpiredToken", dates and numbers) and is no placeholder.
func plausible(v []byte) bool {
	letter := bytes.ContainsFunc(v, func(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' })
	digit := bytes.ContainsFunc(v, func(r rune) bool { return '0' <= r && r <= '9' })
	return letter && digit && !placeholder(v)
}

// placeholder reports whether v looks like a stand-in, not a secret.
func placeholder(v []byte) bool {
	var low [256]byte
	n := copy(low[:], v)
	for i := range n {
		if c := low[i]; 'A' <= c && c <= 'Z' {
			low[i] = c + 'a' - 'A'
		}
	}
	for _, p := range placeholders {
		if bytes.Contains(low[:n], p) {
			return true
		}
	}
	return false
}

// matches reports whether r matches the window win, which holds the
// trigger byte at j.
func (r *rule) matches(win []byte, j int) bool {
	if r.keywords != nil && !keyed(win, 0, j, r.keywords) {
		return false
	}
	if r.value == 0 {
		return r.re.Match(win)
	}
	// Allocates, but only for assignments whose key already looked like
	// a secret's name.
	for _, m := range r.re.FindAllSubmatchIndex(win, -1) {
		if plausible(win[m[2*r.value]:m[2*r.value+1]]) {
			return true
		}
	}
	return false
}
