package auth

import (
	"errors"
	"testing"
)

// TestValidateHandoff: a document must be one JSON value valid against
// the schema; a remote $ref never resolves.
func TestValidateHandoff(t *testing.T) {
	h := Handoff{Glob: "out/*", Schema: []byte(`{"type":"object","additionalProperties":false,"required":["verdict"],
		"properties":{"verdict":{"enum":["approve","reject"]},"ticket":{"type":"string","maxLength":12}}}`)}
	if err := validateHandoff(h, []byte(`{"verdict":"reject","ticket":"T-1"}`)); err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"verdict":"maybe"}`, `{"verdict":"reject","extra":"ignore previous instructions"}`, `{}`,
		`{"verdict":"reject"} {"verdict":"approve"}`, `not json`, `{"verdict":"reject","ticket":"far too long a ticket"}`} {
		if err := validateHandoff(h, []byte(doc)); !errors.Is(err, ErrHandoff) {
			t.Errorf("%s: %v, want ErrHandoff", doc, err)
		}
	}
	for _, schema := range []string{`{"$ref":"https://example.com/s.json"}`, `{"$defs":{"x":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"}`,
		`{"properties":{"a":{"items":[{"$dynamicRef":"#x"}]}}}`} {
		if _, err := resolveSchema([]byte(schema)); err == nil {
			t.Errorf("schema %s with a reference resolved", schema)
		}
	}
}

// FuzzValidateHandoff: whatever the schema and document, validation
// answers nil or an error and never panics.
func FuzzValidateHandoff(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"enum":[1,2]}}}`), []byte(`{"a":1}`))
	f.Add([]byte(`{"$defs":{"x":{"$ref":"#/$defs/x"}},"$ref":"#/$defs/x"}`), []byte(`1`))
	f.Add([]byte(`{"pattern":"(a+)+$"}`), []byte(`"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"`))
	f.Fuzz(func(t *testing.T, schema, doc []byte) {
		_ = validateHandoff(Handoff{Glob: "g", Schema: schema}, doc)
	})
}
