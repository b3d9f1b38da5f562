package memory

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// specNote is the specification's example note (AN-07), byte for byte
// as Render writes it.
const specNote = `---
id: mem_4kq2
kind: semantic
subject: customer/acme
valid_from: 2026-10-02
valid_to: null
confidence: 0.8
origin: agent
reviewed: true
sources:
  - nas://home-box/agents/cleo/journal/2026-10-02.md@9f2c1de#L12-L18
supersedes: [mem_1xa9]
---
Acme renewed for 24 months; the champion moved from Dana to Luis.
`

func TestSpecExampleRoundTrip(t *testing.T) {
	n, err := Parse([]byte(specNote))
	if err != nil {
		t.Fatal(err)
	}
	want := &Note{ID: "mem_4kq2", Kind: KindSemantic, Subject: "customer/acme", ValidFrom: "2026-10-02", Confidence: 0.8,
		Origin: OriginAgent, Reviewed: true, Sources: []string{"nas://home-box/agents/cleo/journal/2026-10-02.md@9f2c1de#L12-L18"},
		Supersedes: []string{"mem_1xa9"}, Body: "Acme renewed for 24 months; the champion moved from Dana to Luis.\n"}
	if !reflect.DeepEqual(n, want) {
		t.Fatalf("Parse = %+v\nwant %+v", n, want)
	}
	b, err := Render(n)
	if err != nil || string(b) != specNote {
		t.Fatalf("Render = %v\n%s\nwant\n%s", err, b, specNote)
	}
}

func TestRenderShapes(t *testing.T) {
	to := "2026-12-31T23:59:59+01:00"
	n := &Note{ID: NewID(), Kind: KindPreference, Subject: "true", ValidFrom: "2026-10-02T09:30:00Z", ValidTo: &to, Confidence: 1,
		Origin: OriginOwner, Body: "---\nnot a fence for the parser\n"}
	b, err := Render(n)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"subject: \"true\"\n", "valid_from: 2026-10-02T09:30:00Z\n", "valid_to: 2026-12-31T23:59:59+01:00\n",
		"confidence: 1.0\n", "reviewed: false\n", "sources: []\n", "supersedes: []\n"} {
		if !strings.Contains(string(b), s) {
			t.Errorf("render lacks %q:\n%s", s, b)
		}
	}
	back, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	n.Sources, n.Supersedes = back.Sources, back.Supersedes // nil and empty alike
	if !reflect.DeepEqual(back, n) {
		t.Fatalf("round trip: %+v\nwant %+v", back, n)
	}
}

func TestValidateRefuses(t *testing.T) {
	ok := func() *Note {
		return &Note{ID: "mem_ab12", Kind: KindEpisodic, Subject: "s", ValidFrom: "2026-01-02", Confidence: 0.5, Origin: OriginAgent}
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := "yesterday"
	for name, f := range map[string]func(*Note){
		"kind":           func(n *Note) { n.Kind = "fact" },
		"origin":         func(n *Note) { n.Origin = "" },
		"empty subject":  func(n *Note) { n.Subject = "  " },
		"long subject":   func(n *Note) { n.Subject = strings.Repeat("s", MaxSubject+1) },
		"subject lines":  func(n *Note) { n.Subject = "a\nb" },
		"confidence":     func(n *Note) { n.Confidence = 1.5 },
		"negative":       func(n *Note) { n.Confidence = -0.1 },
		"valid_from":     func(n *Note) { n.ValidFrom = "2026-13-01" },
		"valid_to":       func(n *Note) { n.ValidTo = &bad },
		"source":         func(n *Note) { n.Sources = []string{"https://example.com/x"} },
		"supersedes":     func(n *Note) { n.Supersedes = []string{"../x"} },
		"supersedes own": func(n *Note) { n.Supersedes = []string{n.ID} },
		"id":             func(n *Note) { n.ID = "mem_AB" },
		"body utf-8":     func(n *Note) { n.Body = "\xff" },
		"body size":      func(n *Note) { n.Body = strings.Repeat("x", MaxBody+1) },
	} {
		n := ok()
		f(n)
		if err := n.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}

func TestNewID(t *testing.T) {
	a, b := NewID(), NewID()
	if a == b || len(a) != len(IDPrefix)+16 || ValidID(a) != nil {
		t.Fatalf("NewID: %q %q", a, b)
	}
}

func TestHomeLayout(t *testing.T) {
	for _, h := range []string{"agents/cleo", "agents/a.b-c_d"} {
		if err := CheckHome(h); err != nil {
			t.Errorf("CheckHome(%q): %v", h, err)
		}
	}
	for _, h := range []string{"", "agents/", "agents/cleo/", "agents/../x", "agents/a/b", "/agents/cleo", "homes/cleo", "agents/Cleo"} {
		if err := CheckHome(h); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckHome(%q) = %v, want ErrInvalid", h, err)
		}
	}
	home := Home("cleo")
	if p := NotePath(home, "mem_a1"); p != "agents/cleo/memory/notes/mem_a1.md" {
		t.Fatal(p)
	}
	for key, want := range map[string]struct {
		id    string
		q, ok bool
	}{
		"agents/cleo/memory/notes/mem_a1.md":      {"mem_a1", false, true},
		"agents/cleo/memory/quarantine/mem_b2.md": {"mem_b2", true, true},
		"agents/cleo/memory/journal/mem_a1.md":    {},
		"agents/cleo/memory/notes/x/mem_a1.md":    {},
		"agents/cleo/memory/notes/mem_A1.md":      {},
		"agents/cleox/memory/notes/mem_a1.md":     {},
		"agents/cleo/memory/MEMORY.md":            {},
	} {
		id, q, ok := ParsePath(home, key)
		if id != want.id || q != want.q || ok != want.ok {
			t.Errorf("ParsePath(%q) = %q %t %t", key, id, q, ok)
		}
	}
	if !InQuarantine("agents/cleo/memory/quarantine/mem_b2.md") || InQuarantine("agents/cleo/memory/notes/mem_a1.md") {
		t.Fatal("InQuarantine")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "no front matter", "---\nid: mem_a\n", "---\n---\nbody", "---\n[1, 2]\n---\n",
		"---\nid: mem_a\n---\n--- \n", "---\nid: &a mem_a\nkind: *a\n---\n", "---\na: 1\n---\nx: 2\n---\n"} {
		if _, err := Parse([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", s, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(specNote))
	f.Add([]byte("---\nid: mem_a\nkind: episodic\nsubject: s\nvalid_from: 2026-01-02T10:00:00+02:00\nconfidence: 1\norigin: owner\n---\n"))
	f.Add([]byte("---\na: &a [*a, *a]\n---\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse: %v does not wrap ErrInvalid", err)
			}
			return
		}
		out, err := Render(n)
		if err != nil {
			t.Fatalf("Render of a parsed note: %v", err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse of a rendered note: %v\n%s", err, out)
		}
		if again.Sources == nil {
			again.Sources = n.Sources
		}
		if again.Supersedes == nil {
			again.Supersedes = n.Supersedes
		}
		if len(n.Sources) == 0 && len(again.Sources) == 0 {
			again.Sources = n.Sources
		}
		if len(n.Supersedes) == 0 && len(again.Supersedes) == 0 {
			again.Supersedes = n.Supersedes
		}
		if !reflect.DeepEqual(again, n) {
			t.Fatalf("round trip:\n%+v\nwant\n%+v", again, n)
		}
	})
}

func TestParseRecallTests(t *testing.T) {
	ts, err := ParseRecallTests([]byte("- query: acme champion\n  expect: [mem_4kq2]\n  top_k: 3\n- query: x\n  expect: [mem_1, mem_2]\n"))
	if err != nil || len(ts) != 2 || ts[0].TopK != 3 || ts[1].Expect[1] != "mem_2" {
		t.Fatalf("%+v %v", ts, err)
	}
	for _, s := range []string{"- query: q\n", "- expect: [mem_1]\n", "- query: q\n  expect: [x]\n", "- query: q\n  expect: [mem_1]\n  topk: 2\n",
		"query: q\n", "- query: q\n  expect: [mem_1]\n  top_k: -1\n", strings.Repeat("- query: q\n  expect: [mem_1]\n", MaxRecallTests+1)} {
		if _, err := ParseRecallTests([]byte(s)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseRecallTests(%.40q) = %v, want ErrInvalid", s, err)
		}
	}
}

// FuzzParseRecallTests: whatever the bytes, ParseRecallTests answers
// cases that hold its own rules or ErrInvalid, and never panics.
func FuzzParseRecallTests(f *testing.F) {
	f.Add([]byte("- query: acme champion\n  expect: [mem_4kq2]\n  top_k: 3\n"))
	f.Add([]byte("- &a {query: q, expect: [mem_1]}\n- *a\n"))
	f.Add([]byte("[]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := ParseRecallTests(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		for _, c := range ts {
			if c.Query == "" || len(c.Expect) == 0 || c.TopK < 0 {
				t.Fatalf("accepted %+v", c)
			}
		}
	})
}
