package gitexport

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentnas/nas/chunk"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
)

func TestEncodeKey(t *testing.T) {
	for _, tc := range []struct {
		key    string
		suffix bool
		path   string
	}{
		{"a/b.txt", false, "a/b.txt"},
		{"a//b", false, "a/%/b"},
		{"dir/", false, "dir/%"},
		{"/x", false, "%/x"},
		{"x", true, "x%~"},
		{"dir/", true, "dir/%%~"},
		{".git/config", false, "%2Egit/config"},
		{".GiT", false, "%2EGiT"},
		{"a/.gitmodules", false, "a/%2Egitmodules"},
		{"a/.git. .", false, "a/%2Egit. ."},
		{".g\u200cit", false, "%2Eg\u200cit"},
		{"git~1", false, "%67it~1"},
		{"GITMOD~4", false, "%47ITMOD~4"},
		{"file~", false, "file~"},
		{".", false, "%2E"},
		{"a/..", false, "a/%2E."},
		{".nas", false, "%2Enas"},
		{".NAS/x", false, "%2ENAS/x"},
		{"a/.nas", false, "a/.nas"},
		{"100%", false, "100%25"},
		{"%41", false, "%2541"},
		{"a\\b", false, "a%5Cb"},
		{"t\tab\x7f", false, "t%09ab%7F"},
		{"bad\xff", false, "bad%FF"},
		{"é/ü", false, "é/ü"},
		{"\x01git~1", false, "%01git~1"},
	} {
		if got := EncodeKey(tc.key, tc.suffix); got != tc.path {
			t.Errorf("EncodeKey(%q, %v) = %q, want %q", tc.key, tc.suffix, got, tc.path)
		}
		k, s, err := DecodeKey(tc.path)
		if err != nil || k != tc.key || s != tc.suffix {
			t.Errorf("DecodeKey(%q) = %q, %v, %v", tc.path, k, s, err)
		}
	}
	for _, bad := range []string{"%2e", "%41", "a%", "a%4", "%zz", "%~", "x%~/y", ".git", "a/./b", "%25%", "git~1", "%2Egit%~%~", ""} {
		if k, _, err := DecodeKey(bad); !errors.Is(err, ErrPath) {
			t.Errorf("DecodeKey(%q) = %q, %v; want ErrPath", bad, k, err)
		}
	}
}

// gitRefuses reports whether Git (fsck, checkout) refuses or treats
// specially a tree entry name: its rules for ".", "..", ".git" under HFS+
// and NTFS, and the special files it reads (.gitmodules, .gitattributes,
// .gitignore, .mailmap) with their NTFS short names.
func gitRefuses(name string) bool {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return true
	}
	l := strings.ToLower(stripIgnorable(name))
	if strings.HasPrefix(l, ".git") || strings.HasPrefix(l, ".mailmap") {
		return true
	}
	for _, p := range []string{"git~", "gi7eba~", "gitmod~", "gi7d29~", "gitatt~", "gi250a~", "gitign~", "maba30~", "mailma~"} {
		if strings.HasPrefix(l, p) && len(l) > len(p) && l[len(p)] >= '0' && l[len(p)] <= '9' {
			return true
		}
	}
	return strings.ContainsRune(name, '\\')
}

func FuzzEscapeKey(f *testing.F) {
	for _, k := range awkwardKeys {
		f.Add(k, false)
	}
	f.Add("x", true)
	f.Add(".mailmap", false)
	f.Fuzz(func(t *testing.T, key string, suffix bool) {
		p := EncodeKey(key, suffix)
		k, s, err := DecodeKey(p)
		if err != nil || k != key || s != suffix {
			t.Fatalf("%q -> %q -> %q, %v, %v", key, p, k, s, err)
		}
		for i, name := range strings.Split(p, "/") {
			if gitRefuses(name) {
				if strings.HasPrefix(strings.ToLower(stripIgnorable(name)), ".mailmap") {
					continue // only a symlink named .mailmap is refused; we write files
				}
				t.Fatalf("%q -> %q: Git refuses name %q", key, p, name)
			}
			if i == 0 && strings.EqualFold(name, nasDir) {
				t.Fatalf("%q -> %q: clashes with the metadata directory", key, p)
			}
			if name == entriesName || !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("%q -> %q: bad name %q", key, p, name)
			}
		}
	})
}

func FuzzDecodeName(f *testing.F) {
	for _, s := range []string{"%", "%~", "%%~", "a%41", "%2Egit", "x%~", "%entries.jsonl", "%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		seg, suffix, err := DecodeSegment(name, true)
		if err != nil {
			return
		}
		back := EncodeSegment(seg, true)
		if suffix {
			back += fileSuffix
		}
		if back != name {
			t.Fatalf("%q decodes to %q (suffix %v), which encodes to %q", name, seg, suffix, back)
		}
	})
}

// FuzzParseLine feeds metadata lines: parseLine must never panic, and a
// line it accepts is exactly the rendering of what it returned.
func FuzzParseLine(f *testing.F) {
	e := &manifest.Entry{Size: 3, ETag: "abc", VersionID: "0000000000000001deadbeef", ContentType: "text/plain",
		Meta: []manifest.Pair{{Name: "k", Value: "v\xff"}}, Content: &manifest.Content{Chunks: []chunk.Ref{{Hash: chunk.Sum([]byte("abc")), Size: 3}}}}
	line, err := renderLine(&fileRec{key: "dir/a\xffb", entry: e.Encode(), writer: "00000000000000ff"}, "a%FFb")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(line)
	e.Label = &label.Label{Origin: label.External, Sensitivity: label.Secret}
	labelled, err := renderLine(&fileRec{key: "dir/l", entry: e.Encode()}, "l")
	if err != nil || !bytes.Contains(labelled, []byte(`"labels":{"origin":"external","sensitivity":"secret"}`)) {
		f.Fatalf("a labelled entry's line: %s %v", labelled, err)
	}
	f.Add(labelled)
	f.Add([]byte(`{"key":"k","name":"k","size":0,"etag":"","mod_time":"1970-01-01T00:00:00Z","chunks":0,"entry":""}`))
	f.Add([]byte(`{"key":{"base64":"/w=="}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, name, err := parseLine(b)
		if err != nil {
			return
		}
		again, err := renderLine(rec, name)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("accepted %q, renders %q (%v)", b, again, err)
		}
	})
}

// FuzzCommitDoc feeds commit.json documents: decoding never panics and a
// document that decodes and verifies renders back to itself.
func FuzzCommitDoc(f *testing.F) {
	c := &manifest.Commit{Message: "m\x00\xff", Principal: "p", Time: 5, Extra: []manifest.Pair{{Name: "a", Value: "b"}}}
	b, _ := indentPlain(newCommitDoc(c.ID(), c, nil))
	f.Add(b)
	f.Add([]byte(`{"id":"` + strings.Repeat("0", 64) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var doc commitDoc
		if decodeStrict(b, &doc) != nil || doc.Base != nil {
			return
		}
		id, c, info, err := doc.commit()
		if err != nil {
			return
		}
		again, _ := indentPlain(newCommitDoc(id, c, info))
		if bytes.Equal(again, b) {
			return
		}
		// Accepted only if canonical: ReadGit compares exactly this.
		var doc2 commitDoc
		if err := decodeStrict(again, &doc2); err != nil {
			t.Fatalf("re-rendered document does not decode: %v", err)
		}
	})
}

func TestTextJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "<&>", "bad\xff", "\x00nul"} {
		b, err := text(s).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back text
		if err := back.UnmarshalJSON(b); err != nil || string(back) != s {
			t.Errorf("%q -> %s -> %q %v", s, b, back, err)
		}
		if !utf8.ValidString(s) && !strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(s))) {
			t.Errorf("%q not kept as base64: %s", s, b)
		}
	}
}
