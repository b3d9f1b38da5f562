package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The example secrets are built from pieces so that the repository
// itself does not look like it leaks keys.
var examples = map[string][]string{
	"aws-access-key-id": {
		"aws_access_key_id = " + "AKIA" + "IOSFODNN7EXAMPLE" + "\n",
		`{"AccessKeyId": "` + "ASIA" + "Y34FZKBOKMUTVV7A" + `"}`,
	},
	"aws-secret-access-key": {
		"aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY\n",
		`"SecretAccessKey": "` + "je7MtGbClwBF/2Zp9Utk/" + "h3yCo8nvbEXAMPLEKEY" + `",`,
	},
	"private-key": {
		"-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n",
		"-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n",
		"-----BEGIN " + "EC PRIVATE KEY-----\n",
		"-----BEGIN " + "PRIVATE KEY-----\n",
		"-----BEGIN " + "PGP PRIVATE KEY BLOCK-----\n",
	},
	"github-token": {
		"GITHUB_TOKEN=" + "ghp_" + "16C7e42F292c6912E7710c838347Ae178B4a",
		"auth: " + "gho_" + "16C7e42F292c6912E7710c838347Ae178B4a",
		"ghs_" + "16C7e42F292c6912E7710c838347Ae178B4a",
		"github_pat_" + "11ABCDEFG0123456789abc_" + "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW",
	},
	"slack-token": {
		"SLACK=" + "xoxb-" + "263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1",
		"xoxp-" + "1234567890-abcdefghij",
	},
	"stripe-live-key": {
		`stripe.Key = "` + "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + `"`,
	},
	"google-api-key": {
		"key=" + "AIza" + "SyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe&q=x",
	},
	"jwt": {
		"Authorization: Bearer " + "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	},
	"nas-mcp-token": {
		"Authorization: Bearer " + "nasmcp_" + "q3Zb9xT2v8K1mN4pR7sW0yA5cE6fH8jL-_uVdXgIoPk",
	},
	"generic-assignment": {
		`password = "` + "hunter2" + `hunter2"`,
		`"client_secret": "` + "8f3a9c1d" + `7e2b4f60"`,
		"API_KEY=" + "9f8e7d6c5b4a3928" + "1706f5e4d3c2b1a0\n",
		`db_password: '` + "s3cr3t!Pass" + `'`,
		`apiKey := "` + "AbCdEf123456" + `"`,
	},
}

func scanAll(data []byte, sizes ...int) *Scanner {
	s := New()
	for len(data) > 0 {
		n := len(data)
		if len(sizes) > 0 {
			n = min(sizes[0], n)
			sizes = sizes[1:]
		}
		if w, err := s.Write(data[:n]); w != n || err != nil {
			panic("Write failed")
		}
		data = data[n:]
	}
	return s
}

func TestRulesFindTheirExamples(t *testing.T) {
	for name, exs := range examples {
		if !slices.Contains(RuleNames(), name) {
			t.Fatalf("example for unknown rule %s", name)
		}
		for _, ex := range exs {
			got := scanAll([]byte(ex)).Rules()
			if !slices.Contains(got, name) {
				t.Errorf("%s: %q matched %v", name, ex, got)
			}
		}
	}
	for _, name := range RuleNames() {
		if len(examples[name]) == 0 {
			t.Errorf("rule %s has no example", name)
		}
	}
}

// Near misses: shapes close to a rule that must not match.
var clean = []string{
	"AKIA" + "IOSFODNN7EXAMPL",              // 15 characters
	"xAKIA" + "IOSFODNN7EXAMPLE",            // not a word of its own
	"AKIA" + "IOSFODNN7EXAMPLEX",            // 17 characters
	"-----BEGIN PUBLIC KEY-----",            // public
	"-----BEGIN CERTIFICATE-----",           // public
	"ghp_" + "short",                        // too short
	"sk_test_" + "4eC39HqLyjWDarjtT1zdp7dc", // test key
	"password = os.Getenv(\"DB_PASSWORD\")",
	"password: ${DB_PASSWORD}",
	`password = "short"`,
	`token = "<your token here>"`,
	`api_key = "your-api-key-here"`,
	`password: "********"`,
	`secret = "EXAMPLE_SECRET_VALUE"`,
	"token := s.next()",
	"if token == nil {",
	"the password is required: see below",
	`"nextToken": null`,
	"nasmcp_" + "short",
	"eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", // a header alone
}

func TestNearMissesDoNotMatch(t *testing.T) {
	for _, c := range clean {
		if got := scanAll([]byte(c)).Rules(); got != nil {
			t.Errorf("%q matched %v", c, got)
		}
	}
}

// fixtures are the repository's files that hold hard-coded credentials
// of test and benchmark owners: true positives, which the scanner must go
// on finding.
var fixtures = map[string][]string{
	"../bench/source.go":    {"aws-access-key-id"},
	"../bench/target.go":    {"aws-access-key-id", "generic-assignment"},
	"../nastest/nastest.go": {"aws-access-key-id", "generic-assignment"},
}

// TestOrdinaryContentDoesNotMatch scans the repository's own Go source
// and Markdown, prose, and random base64: false labels hide data.
func TestOrdinaryContentDoesNotMatch(t *testing.T) {
	var files []string
	for _, pat := range []string{"../*/*.go", "../*/*.md", "../*.md", "../docs/*.md", "../cmd/*/*.go"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d files to scan", len(files))
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue // tests hold fake credentials on purpose
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, want := scanAll(b).Rules(), fixtures[filepath.ToSlash(f)]
		if !slices.Equal(got, want) {
			t.Errorf("%s matched %v, want %v", f, got, want)
		}
	}
	if got := scanAll(prose(1 << 20)).Rules(); got != nil {
		t.Errorf("prose matched %v", got)
	}
	for i := range 20 {
		raw := make([]byte, 1<<16)
		rand.Read(raw)
		enc := []byte(base64.StdEncoding.EncodeToString(raw))
		if i%2 == 1 {
			enc = []byte(base64.URLEncoding.EncodeToString(raw))
		}
		if got := scanAll(enc).Rules(); got != nil {
			t.Errorf("random base64 matched %v", got)
		}
	}
}

// TestSplitAtEveryPoint cuts each example, inside ordinary text, into two
// writes at every point, and across a chunk boundary.
func TestSplitAtEveryPoint(t *testing.T) {
	for name, exs := range examples {
		for _, ex := range exs {
			for _, pad := range []int{10, chunkSize - 7, chunkSize + keep - len(ex)/2} {
				data := append(append(prose(pad-1), '\n'), ex...)
				data = append(data, " and then some more text.\n"...)
				for cut := pad - 1; cut <= pad+len(ex); cut++ {
					if got := scanAll(data, cut).Rules(); !slices.Contains(got, name) {
						t.Fatalf("%s: pad %d cut %d: matched %v", name, pad, cut, got)
					}
				}
			}
		}
	}
}

func TestStopsAfterAMatch(t *testing.T) {
	s := New()
	s.Write([]byte(examples["private-key"][0]))
	s.Write(prose(3 * chunkSize))
	if !s.Found() {
		t.Fatal("not found")
	}
	s.Write([]byte(examples["jwt"][0]))
	if got := s.Rules(); !slices.Equal(got, []string{"private-key"}) {
		t.Errorf("Rules = %v, want only the rule of the first matching chunk", got)
	}
}

func TestWriteDoesNotAllocate(t *testing.T) {
	s := New()
	p := prose(1 << 20)
	if n := testing.AllocsPerRun(5, func() { s.Write(p) }); n != 0 {
		t.Errorf("Write allocates %v times a call", n)
	}
}

// TestNoOutboundCalls keeps the package, which decides labels, from
// linking a network client.
func TestNoOutboundCalls(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net" || strings.HasPrefix(dep, "net/") {
			t.Errorf("secret links %s", dep)
		}
	}
}

func TestEmpty(t *testing.T) {
	s := New()
	if s.Found() || s.Rules() != nil {
		t.Error("empty stream matched")
	}
}

// prose returns n bytes of English-like text, deterministically.
func prose(n int) []byte {
	words := strings.Fields(`the gateway streams uploads to storage and each object gets a label
	A lease grants an agent access to keys under a prefix for a while, and Is revoked when done.
	Objects are chunked, hashed (BLAKE3) and stored once; manifests list the chunks of a commit.
	You can fork a branch, mount it with FUSE, or read it over S3: PUT, GET, LIST and DELETE.
	"quoted" words, numbers like 1024 or 3.14, and punctuation - all appear in real text. Ja zu!`)
	r := mrand.New(mrand.NewPCG(1, 2))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// RuleNames returns the names of all rules, in the order of the package
// documentation.
func RuleNames() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}
