package policy

import (
	"strings"
	"testing"

	"github.com/agentnas/nas/label"
)

// TestGuardCompletes: only A and B and C together complete the
// invariant; the threshold moves B; the reason names all three.
func TestGuardCompletes(t *testing.T) {
	ext := label.Taint{Origins: []string{label.Owner, label.External}, Sensitivity: label.Private}
	clean := label.Taint{Origins: []string{label.Owner}, Sensitivity: label.Private}
	var g *Guard
	for _, c := range []struct {
		g         *Guard
		ceiling   string
		t         label.Taint
		protected bool
		want      bool
	}{
		{g, "", ext, true, true},
		{g, "secret", ext, true, true},
		{g, "public", ext, true, false}, // no B
		{g, "", clean, true, false},     // no A
		{g, "", ext, false, false},      // no C
		{&Guard{SensitiveAt: label.Secret}, "private", ext, true, false},
		{&Guard{SensitiveAt: label.Secret}, "secret", ext, true, true},
	} {
		got, why := c.g.Completes(c.ceiling, c.t, "main", c.protected)
		if got != c.want || got && !(strings.Contains(why, "(A)") && strings.Contains(why, "(B)") && strings.Contains(why, "(C)") && strings.HasPrefix(why, RuleOfTwo)) {
			t.Errorf("%+v %q %+v %v: %v %q", c.g, c.ceiling, c.t, c.protected, got, why)
		}
	}
	if g.Action() != Hold || (&Guard{OnWouldCompleteABC: Refuse}).Action() != Refuse || g.LogOnly() || !(&Guard{Mode: GuardLogOnly}).LogOnly() {
		t.Fatal("defaults")
	}
	for _, bad := range []Guard{{OnWouldCompleteABC: Merge}, {Mode: "warn"}, {SensitiveAt: "public"}} {
		p := Policy{Guard: &bad}
		if p.Validate() == nil {
			t.Errorf("guard %+v validated", bad)
		}
	}
}
