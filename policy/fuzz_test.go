package policy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// parsePolicy reads a policy the way the control API's policy/set does:
// one JSON value, unknown fields refused (a misspelt condition must not
// silently widen a rule), then validated.
func parsePolicy(b []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

func policyFixtures(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "policies", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("policy fixtures: %v %v", paths, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// TestPolicyFixtures: testdata/policies/valid-*.json parse and validate,
// invalid-*.json do not.
func TestPolicyFixtures(t *testing.T) {
	for name, b := range policyFixtures(t) {
		t.Run(name, func(t *testing.T) {
			_, err := parsePolicy(b)
			if valid := strings.HasPrefix(name, "valid-"); valid != (err == nil) {
				t.Fatalf("parse: %v", err)
			}
		})
	}
}

// FuzzPolicyJSON: parsing, validating and deciding never panic, and a
// valid policy survives a JSON round trip (the one through kv) with the
// same encoding and the same decision.
func FuzzPolicyJSON(f *testing.F) {
	for _, b := range policyFixtures(f) {
		f.Add(b, "docs/a.md\nsrc/main.go", "cleo", "main", false)
	}
	f.Add([]byte(`{"rules":[{"name":"x","deletes":null,"roles":[],"then":"merge"}]}`), "", "owner", "main", true)
	f.Add([]byte(`{"rules":[{"name":"\u00e9\ud800","within":["**/*?*"],"then":"refuse"}]}`), "a/b/c", "", "", false)
	f.Fuzz(func(t *testing.T, data []byte, keys, role, into string, deletes bool) {
		p, err := parsePolicy(data)
		if err != nil {
			return
		}
		fa := Facts{Role: role, Into: into, Keys: strings.Split(keys, "\n"), Deletes: deletes}
		action, rule := p.Decide(fa)
		if action != Merge && action != Hold && action != Refuse {
			t.Fatalf("Decide returned %q", action)
		}
		b1, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal a valid policy: %v", err)
		}
		p2, err := parsePolicy(b1)
		if err != nil {
			t.Fatalf("a valid policy does not parse after a round trip: %v\n%s", err, b1)
		}
		b2, err := json.Marshal(p2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("the round trip changed the policy:\n%s\n%s", b1, b2)
		}
		if a2, r2 := p2.Decide(fa); a2 != action || r2 != rule {
			t.Fatalf("the round trip changed the decision: %s by %q, then %s by %q", action, rule, a2, r2)
		}
	})
}
