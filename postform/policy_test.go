package postform

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const future = `"2026-05-01T13:00:00.000Z"`

func form(fields ...string) *Form {
	f := &Form{FileName: "photo.jpg"}
	for i := 0; i+1 < len(fields); i += 2 {
		f.Fields = append(f.Fields, Field{Name: fields[i], Value: fields[i+1]})
	}
	return f
}

func TestDecodeInvalid(t *testing.T) {
	for _, doc := range []string{
		`not json`,
		`{"conditions": []}`,
		`{"EXPIRATION": ` + future + `, "conditions": []}`,
		`{"expiration": ` + future + `}`,
		`{"expiration": ` + future + `, "CONDITIONS": []}`,
		`{"expiration": "2026-05-01 13:00:00", "conditions": []}`,
		`{"expiration": 5, "conditions": []}`,
		`{"expiration": ` + future + `, "conditions": {}}`,
		`{"expiration": ` + future + `, "conditions": [{}]}`,
		`{"expiration": ` + future + `, "conditions": [{"key": 5}]}`,
		`{"expiration": ` + future + `, "conditions": [["eq", "key", "a"]]}`,
		`{"expiration": ` + future + `, "conditions": [["eq", "$key"]]}`,
		`{"expiration": ` + future + `, "conditions": [["like", "$key", "a"]]}`,
		`{"expiration": ` + future + `, "conditions": [["content-length-range", 0]]}`,
		`{"expiration": ` + future + `, "conditions": [["content-length-range", -1, 0]]}`,
		`{"expiration": ` + future + `, "conditions": [["content-length-range", 10, 5]]}`,
		`{"expiration": ` + future + `, "conditions": [7]}`,
	} {
		_, err := Decode(b64(doc))
		var pe *PolicyError
		if !errors.Is(err, ErrInvalidPolicy) || !errors.As(err, &pe) || pe.Reason == "" {
			t.Errorf("%s: %v, want ErrInvalidPolicy", doc, err)
		}
	}
	if _, err := Decode("!!"); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("bad base64: %v", err)
	}
}

func TestDecode(t *testing.T) {
	p, err := Decode(b64(`{"expiration": ` + future + `, "conditions": [
		{"bUcKeT": "photos", "acl": "private"},
		["StArTs-WiTh", "$KeY", "user/"],
		["eq", "$x-amz-meta-tag", "a"],
		["content-length-range", 10, "1000"],
		["content-length-range", 0, 500]]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Condition{{Eq, "bucket", "photos"}, {Eq, "acl", "private"}, {StartsWith, "key", "user/"}, {Eq, "x-amz-meta-tag", "a"}}
	if len(p.Conditions) != len(want) {
		t.Fatalf("conditions %v", p.Conditions)
	}
	for i := range want {
		if p.Conditions[i] != want[i] {
			t.Errorf("condition %d: %v, want %v", i, p.Conditions[i], want[i])
		}
	}
	if !p.HasLength || p.MinLength != 10 || p.MaxLength != 500 {
		t.Errorf("length range %d-%d (%v)", p.MinLength, p.MaxLength, p.HasLength)
	}
	if !p.Expiration.Equal(now.Add(time.Hour)) {
		t.Errorf("expiration %v", p.Expiration)
	}
}

func TestCheck(t *testing.T) {
	doc := `{"expiration": ` + future + `, "conditions": [
		{"bucket": "photos"}, ["starts-with", "$key", "user/"], {"acl": "private"},
		["starts-with", "$Content-Type", ""], ["eq", "$x-amz-meta-tag", ""]]}`
	p, err := Decode(b64(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		f      *Form
		bucket string
		key    string
		at     time.Time
		why    string // "" accepts
	}{
		{"ok", form("key", "user/a", "acl", "private", "policy", "x", "x-amz-signature", "s", "x-ignore-me", "1"), "photos", "user/a", now, ""},
		{"content-type any", form("key", "user/a", "acl", "private", "content-type", "image/png"), "photos", "user/a", now, ""},
		{"expired", form("key", "user/a", "acl", "private"), "photos", "user/a", now.Add(time.Hour), "Policy expired."},
		{"wrong bucket", form("key", "user/a", "acl", "private"), "other", "user/a", now, `Policy Condition failed: ["eq", "$bucket", "photos"]`},
		{"prefix", form("key", "admin/a", "acl", "private"), "photos", "admin/a", now, `Policy Condition failed: ["starts-with", "$key", "user/"]`},
		{"missing acl", form("key", "user/a"), "photos", "user/a", now, `Policy Condition failed: ["eq", "$acl", "private"]`},
		{"meta must be empty", form("key", "user/a", "acl", "private", "x-amz-meta-tag", "b"), "photos", "user/a", now, `Policy Condition failed: ["eq", "$x-amz-meta-tag", ""]`},
		{"extra", form("key", "user/a", "acl", "private", "x-amz-meta-other", "b", "cache-control", "no"), "photos", "user/a", now, "Extra input fields: x-amz-meta-other, cache-control"},
		{"case-sensitive value", form("key", "user/a", "acl", "Private"), "photos", "user/a", now, `Policy Condition failed: ["eq", "$acl", "private"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Check(tc.at, tc.f, tc.bucket, tc.key)
			if tc.why == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var pe *PolicyError
			if !errors.Is(err, ErrPolicy) || !errors.As(err, &pe) || pe.Reason != tc.why {
				t.Fatalf("got %v, want %q", err, tc.why)
			}
		})
	}
}

func TestCheckLength(t *testing.T) {
	p := &Policy{MinLength: 2, MaxLength: 4, HasLength: true}
	for n, want := range map[int64]error{1: ErrTooSmall, 2: nil, 4: nil, 5: ErrTooLarge} {
		if err := p.CheckLength(n); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("%d: %v, want %v", n, err, want)
		}
	}
	if err := (&Policy{}).CheckLength(1 << 40); err != nil {
		t.Errorf("no range: %v", err)
	}
}

func TestKey(t *testing.T) {
	f := form("key", "up/${filename}")
	if got := f.Key(); got != "up/photo.jpg" {
		t.Errorf("key %q", got)
	}
	if !strings.Contains(Condition{StartsWith, "key", "a"}.String(), `"starts-with", "$key", "a"`) {
		t.Error(Condition{StartsWith, "key", "a"}.String())
	}
}
