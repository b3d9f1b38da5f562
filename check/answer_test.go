package check

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeAnswer(t *testing.T) {
	const digest = "abc"
	for _, tc := range []struct {
		body, state string
		ok          bool
	}{
		{`{"state":"pass"}`, StatePass, true},
		{`{"state":"fail","message":"lint: 2 problems"}`, StateFail, true},
		{`{"state":"pass","diff_sha256":"abc"}`, StatePass, true},
		{`{"state":"pass","diff_sha256":"old"}`, "", false}, // about another diff: does not count
		{`{"state":"pass","extra":1}`, StatePass, true},     // receivers may say more
		{`{"state":"error"}`, "", false},
		{`{"state":"PASS"}`, "", false},
		{`{}`, "", false},
		{``, "", false},
		{`[]`, "", false},
		{`{"state":"pass"} {"state":"fail"}`, "", false},
		{`{"state":"pass","message":"` + strings.Repeat("x", MaxAnswer) + `"}`, "", false},
	} {
		a, err := DecodeAnswer(strings.NewReader(tc.body), digest)
		if (err == nil) != tc.ok || a.State != tc.state {
			t.Errorf("%.60q: %+v %v, want state %q ok %v", tc.body, a, err, tc.state, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%.60q: %v is not ErrInvalid", tc.body, err)
		}
	}
	long := `{"state":"fail","message":"` + strings.Repeat("é", MaxMessage) + `"}`
	a, err := DecodeAnswer(strings.NewReader(long), digest)
	if err != nil || len(a.Message) > MaxMessage || !utf8.ValidString(a.Message) {
		t.Fatalf("a long message: %d bytes, valid %v, %v", len(a.Message), utf8.ValidString(a.Message), err)
	}
}

// FuzzDecodeAnswer: whatever a receiver answers, the decoder returns a
// pass or a fail with a bounded, valid message, or ErrInvalid.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`{"state":"pass"}`, `{"state":"fail","message":"x"}`, `{"state":"pass","diff_sha256":"d"}`, `{"message":"\xff"}`, `null`, `{"state":"fail","message":"\u00e9\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAnswer(strings.NewReader(string(b)), "d")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v is not ErrInvalid", err)
			}
			return
		}
		if a.State != StatePass && a.State != StateFail || len(a.Message) > MaxMessage || !utf8.ValidString(a.Message) {
			t.Fatalf("decoded %+v", a)
		}
		if a.DiffSHA256 != "" && a.DiffSHA256 != "d" {
			t.Fatalf("an answer about another digest counted: %+v", a)
		}
	})
}
