package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDocumentedExamplePolicy: the example in docs/policy.md is valid and
// decides as the text after it says.
func TestDocumentedExamplePolicy(t *testing.T) {
	b, err := os.ReadFile("../docs/examples/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(doc)
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f    Facts
		want Action
		rule string
	}{
		{Facts{Role: "docs-bot", Into: "main", Keys: []string{"docs/a.md", "docs/b/c.md", "README.md"}}, Merge, "docs-bot-small-doc-edits"},
		{Facts{Role: "docs-bot", Into: "main", Keys: []string{"docs/a.md"}, Deletes: true}, Hold, "deletes-need-a-person"},
		{Facts{Role: "docs-bot", Into: "main", Keys: []string{"src/main.go"}}, Hold, "default: a person decides"},
		{Facts{Role: "docs-bot", Into: "release", Keys: []string{"docs/a.md"}}, Refuse, "release-is-owner-only"},
		{Facts{Role: "owner", Into: "main", Keys: []string{"secrets/prod.env"}}, Hold, "sensitive-paths-need-a-person"},
		{Facts{Role: "owner", Into: "main", Keys: []string{"src/main.go"}}, Merge, "owner"},
	} {
		if got, rule := p.Decide(c.f); got != c.want || rule != c.rule {
			t.Errorf("%+v: %s by %q, want %s by %q", c.f, got, rule, c.want, c.rule)
		}
	}
}
