package postform

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Op is what a condition asks of a field.
type Op int

// The operators of conditions on fields.
const (
	// Eq asks for the exact value: {"field": "v"} or ["eq", "$field", "v"].
	Eq Op = iota
	// StartsWith asks for a prefix: ["starts-with", "$field", "p"]; an
	// empty prefix allows any value.
	StartsWith
)

// Condition is one condition of a policy on a form field.
type Condition struct {
	Op    Op
	Field string // lower-case, without the "$"
	Value string
}

// String returns the condition as S3 names it in refusals:
// ["eq", "$key", "a"].
func (c Condition) String() string {
	op := "eq"
	if c.Op == StartsWith {
		op = "starts-with"
	}
	return fmt.Sprintf("[%q, %q, %q]", op, "$"+c.Field, c.Value)
}

// holds reports whether the condition holds for value v.
func (c Condition) holds(v string) bool {
	if c.Op == StartsWith {
		return strings.HasPrefix(v, c.Value)
	}
	return v == c.Value
}

// Policy is a decoded POST policy document.
type Policy struct {
	// Expiration is when the policy stops allowing uploads.
	Expiration time.Time
	// Conditions are the conditions on fields, in the document's order.
	Conditions []Condition
	// MinLength and MaxLength are the content-length-range (the
	// intersection, when given more than once); HasLength says one was
	// given.
	MinLength, MaxLength int64
	HasLength            bool
}

// maxPolicy bounds the decoded document (the field is bounded anyway).
const maxPolicy = MaxFields

// Decode decodes the base64 policy field. Its top-level names are
// case-sensitive ("expiration", "conditions"), as S3's are; operators and
// field names of conditions are not. Errors are *PolicyError wrapping
// ErrInvalidPolicy.
func Decode(field string) (*Policy, error) {
	doc, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(field), ""))
	if err != nil || len(doc) > maxPolicy {
		return nil, invalid("Policy could not be base64-decoded.")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, invalid("Invalid JSON.")
	}
	p := &Policy{}
	if err := p.decodeExpiration(top["expiration"]); err != nil {
		return nil, err
	}
	raw, ok := top["conditions"]
	if !ok {
		return nil, invalid("Policy missing conditions.")
	}
	var conds []json.RawMessage
	if err := json.Unmarshal(raw, &conds); err != nil || conds == nil {
		return nil, invalid("Invalid 'conditions' value: must be a list.")
	}
	for _, c := range conds {
		if err := p.decodeCondition(c); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// decodeExpiration reads the ISO 8601 expiration.
func (p *Policy) decodeExpiration(raw json.RawMessage) error {
	if raw == nil {
		return invalid("Policy missing expiration.")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return invalid("Invalid 'expiration' value: %s", clip(string(raw)))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return invalid("Invalid 'expiration' value: '%s'", clip(s))
	}
	p.Expiration = t
	return nil
}

// decodeCondition reads one element of "conditions": an object of exact
// matches or an array whose first element names the operator.
func (p *Policy) decodeCondition(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		return p.decodeExact(raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || len(elems) == 0 {
		return invalid("Invalid condition: %s", clip(string(raw)))
	}
	var op string
	if err := json.Unmarshal(elems[0], &op); err != nil {
		return invalid("Invalid condition: %s", clip(string(raw)))
	}
	switch strings.ToLower(op) {
	case "eq":
		return p.decodeMatch(Eq, elems, raw)
	case "starts-with":
		return p.decodeMatch(StartsWith, elems, raw)
	case "content-length-range":
		return p.decodeRange(elems, raw)
	}
	return invalid("Invalid condition type: %s", clip(op))
}

// decodeExact reads {"field": "value", ...}, keeping the document's order.
func (p *Policy) decodeExact(raw json.RawMessage) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil { // {
		return invalid("Invalid JSON.")
	}
	n := 0
	for d.More() {
		tok, err := d.Token()
		k, ok := tok.(string)
		if err != nil || !ok {
			return invalid("Invalid JSON.")
		}
		var v string
		if err := d.Decode(&v); err != nil {
			return invalid("Invalid simple condition: %s", clip(string(raw)))
		}
		p.Conditions = append(p.Conditions, Condition{Op: Eq, Field: strings.ToLower(k), Value: v})
		n++
	}
	if n == 0 {
		return invalid("Invalid simple condition: %s", clip(string(raw)))
	}
	return nil
}

// decodeMatch reads ["eq" | "starts-with", "$field", "value"].
func (p *Policy) decodeMatch(op Op, elems []json.RawMessage, raw json.RawMessage) error {
	var field, value string
	if len(elems) != 3 || json.Unmarshal(elems[1], &field) != nil || json.Unmarshal(elems[2], &value) != nil {
		return invalid("Invalid condition: %s", clip(string(raw)))
	}
	name, ok := strings.CutPrefix(field, "$")
	if !ok || name == "" {
		return invalid("Invalid condition: %s: the field must be named with a leading $", clip(string(raw)))
	}
	p.Conditions = append(p.Conditions, Condition{Op: op, Field: strings.ToLower(name), Value: value})
	return nil
}

// decodeRange reads ["content-length-range", min, max] (numbers or
// numeric strings), 0 <= min <= max.
func (p *Policy) decodeRange(elems []json.RawMessage, raw json.RawMessage) error {
	if len(elems) != 3 {
		return invalid("Invalid content-length-range: %s", clip(string(raw)))
	}
	lo, err1 := number(elems[1])
	hi, err2 := number(elems[2])
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return invalid("Invalid content-length-range: %s", clip(string(raw)))
	}
	if p.HasLength {
		lo, hi = max(lo, p.MinLength), min(hi, p.MaxLength)
	}
	p.MinLength, p.MaxLength, p.HasLength = lo, hi, true
	return nil
}

// number reads a JSON integer, or a string holding one.
func number(raw json.RawMessage) (int64, error) {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	return strconv.ParseInt(s, 10, 64)
}

// Exempt reports whether a field needs no condition: the policy itself,
// its signature (SigV4's x-amz-signature, or SigV2's signature and
// AWSAccessKeyId), the file, x-ignore-* fields and the file's
// x-amz-checksum-* (it can only make the upload fail, never widen what
// the policy allows).
func Exempt(name string) bool {
	switch name {
	case "policy", "x-amz-signature", "signature", "awsaccesskeyid", FileField:
		return true
	}
	return strings.HasPrefix(name, "x-ignore-") || strings.HasPrefix(name, "x-amz-checksum-")
}

// Check checks the form, at now, for an upload of key (${filename}
// already substituted) to bucket: the policy has not expired, every
// condition holds (the bucket condition against bucket, the key
// conditions against key; a missing field has the value "") and every
// field but the exempt ones is covered by a condition. Errors are
// *PolicyError wrapping ErrPolicy, in S3's words.
func (p *Policy) Check(now time.Time, f *Form, bucket, key string) error {
	if !now.Before(p.Expiration) {
		return refused("Policy expired.")
	}
	for _, c := range p.Conditions {
		v := f.Value(c.Field)
		switch c.Field {
		case "bucket":
			v = bucket
		case "key":
			v = key
		}
		if !c.holds(v) {
			return refused("Policy Condition failed: %s", clip(c.String()))
		}
	}
	var extra []string
	for _, fd := range f.Fields {
		if !Exempt(fd.Name) && !p.covers(fd.Name) {
			extra = append(extra, fd.Name)
		}
	}
	if len(extra) > 0 {
		return refused("Extra input fields: %s", clip(strings.Join(extra, ", ")))
	}
	return nil
}

// covers reports whether a condition names the field.
func (p *Policy) covers(name string) bool {
	for _, c := range p.Conditions {
		if c.Field == name {
			return true
		}
	}
	return false
}

// CheckLength checks a file of n bytes against the content-length-range:
// ErrTooSmall or ErrTooLarge.
func (p *Policy) CheckLength(n int64) error {
	switch {
	case !p.HasLength:
		return nil
	case n < p.MinLength:
		return fmt.Errorf("%w: %d bytes, at least %d allowed", ErrTooSmall, n, p.MinLength)
	case n > p.MaxLength:
		return fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, n, p.MaxLength)
	}
	return nil
}

// clip bounds what of the client's text a message repeats.
func clip(s string) string {
	if len(s) > 256 {
		return s[:256] + "..."
	}
	return s
}
