package secret

import (
	"bytes"
	"regexp"
)

// rule is one kind of credential. A match needs one of its triggers and
// then its expression, which is anchored at the trigger's literal ("^"),
// so it costs the length of a token, not of the window. Keyed rules
// (assignments, whose literal is the separator) first ask keyed whether
// the name before the separator ends in one of their keywords, which
// rejects most "=" and ":" of code cheaply.
type rule struct {
	name     string
	re       *regexp.Regexp
	word     bool     // the literal must start a word: no letter, digit or "_" before it
	keywords []string // normalized (lower case, no "_" or "-") name endings; nil for literal rules
	value    int      // submatch holding the value to test with plausible; 0 for none
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
// an assignment (and the start of a literal, at most 10 bytes before its
// trigger byte); WindowRight the longest token the rules need to see.
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
// JSON: "=", ":=", ":" or "=>", and optional blanks.
const assign = `^(?::=|=>|=|:)[ \t]*`

var (
	awsKeyID = &rule{name: "aws-access-key-id", word: true,
		re: regexp.MustCompile(`^(?:AKIA|ASIA)[A-Z0-9]{16}\b`)}
	awsSecret = &rule{name: "aws-secret-access-key",
		re:       regexp.MustCompile(assign + `["']?[A-Za-z0-9/+]{40}(?:[^A-Za-z0-9/+=]|$)`),
		keywords: []string{"secretaccesskey"}}
	privateKey = &rule{name: "private-key",
		re: regexp.MustCompile(`^-----BEGIN (?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----`)}
	github = &rule{name: "github-token", word: true,
		re: regexp.MustCompile(`^(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)}
	slack = &rule{name: "slack-token", word: true,
		re: regexp.MustCompile(`^xox[abprs]-[A-Za-z0-9-]{10,250}`)}
	stripe = &rule{name: "stripe-live-key", word: true,
		re: regexp.MustCompile(`^[rs]k_live_[A-Za-z0-9]{24,247}\b`)}
	google = &rule{name: "google-api-key", word: true,
		re: regexp.MustCompile(`^AIza[A-Za-z0-9_-]{35}(?:[^A-Za-z0-9_-]|$)`)}
	jwt = &rule{name: "jwt", word: true,
		re: regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8}`)}
	nasMCP = &rule{name: "nas-mcp-token", word: true,
		re: regexp.MustCompile(`^nasmcp_[A-Za-z0-9_-]{43}(?:[^A-Za-z0-9_-]|$)`)}
	generic = &rule{name: "generic-assignment",
		re: regexp.MustCompile(assign +
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
// bytes are chosen to be rare in prose and code and shared ("I" of AKIA,
// ASIA, AIza and BEGIN, "_" of most token prefixes, "J" of eyJ), so a
// few IndexByte passes skip most input; "=" and ":" are common in code and are filtered by the key name.
var triggers = [256][]trigger{
	'I': {{"AKIA", 2, awsKeyID}, {"ASIA", 2, awsKeyID}, {"AIza", 1, google}, {"-----BEGIN ", 8, privateKey}},
	'_': {{"ghp_", 3, github}, {"gho_", 3, github}, {"ghu_", 3, github}, {"ghs_", 3, github}, {"ghr_", 3, github},
		{"github_pat_", 6, github}, {"sk_live_", 2, stripe}, {"rk_live_", 2, stripe}, {"nasmcp_", 6, nasMCP}},
	'x': {{"xox", 0, slack}},
	'J': {{"eyJ", 2, jwt}},
	'=': {{"=", 0, awsSecret}, {"=", 0, generic}},
	':': {{":", 0, awsSecret}, {":", 0, generic}},
}

// triggerBytes lists the bytes that have triggers.
var triggerBytes = []byte("I_xJ=:")

// neighbour is a cheap necessary condition of a trigger byte's literals,
// tested before look: the byte at rel from the trigger byte (-1 or +1)
// must be in ok. On high-entropy data (archives, weights, media) a
// trigger byte comes every 43 bytes and almost none has the neighbour
// its literal needs, so look runs on about one byte in 1,500.
type neighbour struct {
	rel int
	ok  [256]bool
}

// neighbours holds each trigger byte's neighbour condition.
var neighbours [256]neighbour

// keyEnds are the bytes a keyword can end with, in either case: the
// last byte of a key name before an assignment's separator.
var keyEnds [256]bool

func init() {
	for _, r := range rules {
		for _, kw := range r.keywords {
			c := kw[len(kw)-1]
			keyEnds[c], keyEnds[c&^0x20] = true, true
		}
	}
	for _, b := range triggerBytes {
		neighbours[b] = neighbourOf(triggers[b])
	}
}

// neighbourOf derives the condition that holds wherever one of ts can
// match: the byte before the trigger byte when every literal has one (an
// assignment's separator follows a key name, a blank, a quote or the
// ":" of ":="), else the byte after.
func neighbourOf(ts []trigger) neighbour {
	n := neighbour{rel: -1}
	for _, t := range ts {
		switch {
		case t.rule.keywords != nil:
			n.ok = orSet(n.ok, keyEnds)
			for _, c := range []byte(" \t\"':") {
				n.ok[c] = true
			}
		case t.off > 0:
			n.ok[t.lit[t.off-1]] = true
		default:
			return nextOf(ts)
		}
	}
	return n
}

// nextOf is the byte-after condition of literals that start at the
// trigger byte; without one for every literal, every byte passes.
func nextOf(ts []trigger) neighbour {
	n := neighbour{rel: 1}
	for _, t := range ts {
		if t.rule.keywords != nil || len(t.lit) <= t.off+1 {
			for i := range n.ok {
				n.ok[i] = true
			}
			return n
		}
		n.ok[t.lit[t.off+1]] = true
	}
	return n
}

// orSet is the union of two byte sets.
func orSet(a, b [256]bool) [256]bool {
	for i := range a {
		a[i] = a[i] || b[i]
	}
	return a
}

// keyName returns the name before the separator at j in buf (looking no
// further left than lo), lower case and without "_" or "-", in the last
// bytes of into. It skips a ":" of ":=", blanks and one closing quote,
// so `token = `, `"token": ` and `Token:=` all give "token".
func keyName(buf []byte, lo, j int, into *[24]byte) []byte {
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
	// Most names of code end in a byte no keyword ends in: stop here.
	if k < lo || !keyEnds[buf[k]] {
		return into[:0]
	}
	n := len(into)
	for ; k >= lo && n > 0 && isNameByte(buf[k]); k-- {
		c := buf[k]
		if c == '_' || c == '-' {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		n--
		into[n] = c
	}
	return into[n:]
}

// keyed reports whether name ends in one of r's keywords.
func (r *rule) keyed(name []byte) bool {
	for _, kw := range r.keywords {
		if bytes.HasSuffix(name, []byte(kw)) {
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

// matches reports whether r matches the literal at buf[i]. name is the
// key name before it (see keyName), for keyed rules. Windows end
// WindowRight bytes after i, or at the end of buf.
func (r *rule) matches(buf []byte, i int, name []byte) bool {
	if r.word && i > 0 && isWordByte(buf[i-1]) {
		return false
	}
	if r.keywords != nil && !r.keyed(name) {
		return false
	}
	win := buf[i:min(i+WindowRight, len(buf))]
	if r.value == 0 {
		return r.re.Match(win)
	}
	// Allocates, but only for assignments whose key already looked like
	// a secret's name.
	m := r.re.FindSubmatchIndex(win)
	return m != nil && plausible(win[m[2*r.value]:m[2*r.value+1]])
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}
