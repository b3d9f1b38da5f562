package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits of what a check answers.
const (
	// MaxAnswer bounds a webhook's answer body.
	MaxAnswer = 64 << 10
	// MaxMessage bounds a result's message (a command's output is cut
	// there).
	MaxMessage = 4 << 10
)

// Answer is a webhook check's answer, the JSON body of its 2xx
// response: {"state": "pass"|"fail", "message": "...", "diff_sha256":
// "..."}. DiffSHA256, when given, must be the digest the check was sent:
// an answer about another diff does not count.
type Answer struct {
	State      string `json:"state"`
	Message    string `json:"message,omitempty"`
	DiffSHA256 string `json:"diff_sha256,omitempty"`
}

// DecodeAnswer reads an Answer of at most MaxAnswer bytes from r, about
// the diff of digest; its message is cut to MaxMessage bytes of valid
// UTF-8.
func DecodeAnswer(r io.Reader, digest string) (Answer, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxAnswer+1))
	if err != nil {
		return Answer{}, fmt.Errorf("reading the answer: %w", err)
	}
	if len(b) > MaxAnswer {
		return Answer{}, fmt.Errorf("an answer over %d bytes: %w", MaxAnswer, ErrInvalid)
	}
	var a Answer
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("an answer that is not a JSON object {\"state\": \"pass\"|\"fail\", \"message\": ...}: %v: %w", err, ErrInvalid)
	}
	if dec.More() {
		return Answer{}, fmt.Errorf("an answer of more than one JSON value: %w", ErrInvalid)
	}
	if a.State != StatePass && a.State != StateFail {
		return Answer{}, fmt.Errorf("an answer's state is %.40q, not pass or fail: %w", a.State, ErrInvalid)
	}
	if a.DiffSHA256 != "" && a.DiffSHA256 != digest {
		return Answer{}, fmt.Errorf("an answer about digest %.64q, not the proposal's %s (a stale answer does not count): %w", a.DiffSHA256, digest, ErrInvalid)
	}
	a.Message = clip(a.Message)
	return a, nil
}

// clip cuts s to MaxMessage bytes of valid UTF-8.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > MaxMessage {
		s = s[:MaxMessage]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
