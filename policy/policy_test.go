package policy

import (
	"strings"
	"testing"
)

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Policy
		err  string // "" when valid
	}{
		{"empty policy", Policy{}, ""},
		{"every action", Policy{Rules: []Rule{{Name: "m", Then: Merge}, {Name: "g", Then: Hold}, {Name: "r", Then: Refuse}}}, ""},
		{"no name", Policy{Rules: []Rule{{Name: "ok", Then: Merge}, {Then: Merge}}}, "rule 1 has no name"},
		{"no action", Policy{Rules: []Rule{{Name: "r"}}}, "rule r: then must be"},
		{"approve is not an action", Policy{Rules: []Rule{{Name: "r", Then: "approve"}}}, "rule r: then must be"},
		{"actions are case sensitive", Policy{Rules: []Rule{{Name: "r", Then: "MERGE"}}}, "rule r: then must be"},
		{"hold is spelt gate", Policy{Rules: []Rule{{Name: "r", Then: "hold"}}}, "rule r: then must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tc.err)
			}
		})
	}
}

func TestPolicyDecide(t *testing.T) {
	yes, no := true, false
	docs := Facts{Role: "cleo", Into: "main", Keys: []string{"docs/a.md", "docs/b.md"}}
	for _, tc := range []struct {
		name   string
		rules  []Rule
		f      Facts
		action Action
		rule   string
	}{
		{"no rules: a person decides", nil, docs, Hold, "default: a person decides"},
		{"no rule matches: a person decides", []Rule{{Name: "x", Into: []string{"release"}, Then: Merge}}, docs, Hold, "default: a person decides"},
		{"empty rule matches anything", []Rule{{Name: "all", Then: Refuse}}, docs, Refuse, "all"},
		{"first match wins", []Rule{{Name: "first", Then: Merge}, {Name: "second", Then: Refuse}}, docs, Merge, "first"},
		{"a non-matching rule is skipped", []Rule{{Name: "ops", Roles: []string{"ops"}, Then: Refuse}, {Name: "any", Then: Merge}}, docs, Merge, "any"},

		{"role matches", []Rule{{Name: "r", Roles: []string{"ops", "cleo"}, Then: Merge}}, docs, Merge, "r"},
		{"role differs", []Rule{{Name: "r", Roles: []string{"ops"}, Then: Merge}}, docs, Hold, "default: a person decides"},
		{"the owner is role owner", []Rule{{Name: "r", Roles: []string{"owner"}, Then: Merge}}, Facts{Role: "owner", Into: "main", Keys: []string{"k"}}, Merge, "r"},
		{"into matches", []Rule{{Name: "r", Into: []string{"dev", "main"}, Then: Merge}}, docs, Merge, "r"},
		{"into is exact, not a glob", []Rule{{Name: "r", Into: []string{"ma*"}, Then: Merge}}, docs, Hold, "default: a person decides"},

		{"max_changes at the bound", []Rule{{Name: "r", MaxChanges: 2, Then: Merge}}, docs, Merge, "r"},
		{"max_changes one over", []Rule{{Name: "r", MaxChanges: 1, Then: Merge}}, docs, Hold, "default: a person decides"},
		{"max_changes 0 is no bound", []Rule{{Name: "r", Then: Merge}}, Facts{Keys: make([]string, 10000)}, Merge, "r"},

		{"within: every key inside", []Rule{{Name: "r", Within: []string{"docs/**"}, Then: Merge}}, docs, Merge, "r"},
		{"within: one key outside", []Rule{{Name: "r", Within: []string{"docs/**"}, Then: Merge}},
			Facts{Keys: []string{"docs/a.md", "src/main.go"}}, Hold, "default: a person decides"},
		{"within: keys may match different globs", []Rule{{Name: "r", Within: []string{"docs/**", "src/*.go"}, Then: Merge}},
			Facts{Keys: []string{"docs/a.md", "src/main.go"}}, Merge, "r"},
		{"within: * does not cross /", []Rule{{Name: "r", Within: []string{"docs/*"}, Then: Merge}},
			Facts{Keys: []string{"docs/a.md", "docs/deep/b.md"}}, Hold, "default: a person decides"},
		{"within: a leading / is the root", []Rule{{Name: "r", Within: []string{"/docs/**"}, Then: Merge}}, docs, Merge, "r"},
		{"within: a prefix is not a glob", []Rule{{Name: "r", Within: []string{"docs"}, Then: Merge}}, docs, Hold, "default: a person decides"},
		{"within: ? is one byte", []Rule{{Name: "r", Within: []string{"docs/?.md"}, Then: Merge}}, docs, Merge, "r"},

		{"touches: one key hits", []Rule{{Name: "r", Touches: []string{"src/**"}, Then: Refuse}},
			Facts{Keys: []string{"docs/a.md", "src/x/main.go"}}, Refuse, "r"},
		{"touches: no key hits", []Rule{{Name: "r", Touches: []string{"src/**"}, Then: Refuse}}, docs, Hold, "default: a person decides"},
		{"touches: no keys, no hit", []Rule{{Name: "r", Touches: []string{"**"}, Then: Refuse}}, Facts{}, Hold, "default: a person decides"},

		{"deletes true matches a delete", []Rule{{Name: "r", Deletes: &yes, Then: Hold}, {Name: "rest", Then: Merge}},
			Facts{Keys: []string{"a"}, Deletes: true}, Hold, "r"},
		{"deletes true skips no delete", []Rule{{Name: "r", Deletes: &yes, Then: Hold}, {Name: "rest", Then: Merge}},
			Facts{Keys: []string{"a"}}, Merge, "rest"},
		{"deletes false skips a delete", []Rule{{Name: "r", Deletes: &no, Then: Merge}},
			Facts{Keys: []string{"a"}, Deletes: true}, Hold, "default: a person decides"},
		{"deletes false matches no delete", []Rule{{Name: "r", Deletes: &no, Then: Merge}}, Facts{Keys: []string{"a"}}, Merge, "r"},
		{"deletes unset matches a delete", []Rule{{Name: "r", Then: Merge}}, Facts{Keys: []string{"a"}, Deletes: true}, Merge, "r"},

		{"every condition must hold", []Rule{{Name: "all", Roles: []string{"cleo"}, Into: []string{"main"}, MaxChanges: 5,
			Within: []string{"docs/**"}, Touches: []string{"docs/a.md"}, Deletes: &no, Then: Merge}}, docs, Merge, "all"},
		{"one condition fails", []Rule{{Name: "all", Roles: []string{"cleo"}, Into: []string{"main"}, MaxChanges: 5,
			Within: []string{"docs/**"}, Touches: []string{"docs/c.md"}, Deletes: &no, Then: Merge}}, docs, Hold, "default: a person decides"},
		{"the usual policy refuses src", []Rule{
			{Name: "no-src", Touches: []string{"src/**"}, Then: Refuse},
			{Name: "small-docs", Within: []string{"docs/**"}, MaxChanges: 5, Then: Merge},
		}, Facts{Keys: []string{"docs/a.md", "src/main.go"}}, Refuse, "no-src"},
		{"the usual policy merges small docs", []Rule{
			{Name: "no-src", Touches: []string{"src/**"}, Then: Refuse},
			{Name: "small-docs", Within: []string{"docs/**"}, MaxChanges: 5, Then: Merge},
		}, docs, Merge, "small-docs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Policy{Rules: tc.rules}
			if err := p.Validate(); err != nil {
				t.Fatalf("the table's policy is invalid: %v", err)
			}
			action, rule := p.Decide(tc.f)
			if action != tc.action || rule != tc.rule {
				t.Fatalf("Decide = %s by %q, want %s by %q", action, rule, tc.action, tc.rule)
			}
		})
	}
}
