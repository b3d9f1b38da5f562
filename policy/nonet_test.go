package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoOutboundCalls (L3.5): the policy engine, and the labels it
// reads, link nothing that could reach a network or another process, so
// no decision can depend on a model or any outside service: the same
// facts always decide the same way, and an auditor can read the whole of
// what decides.
func TestNoOutboundCalls(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".", "../label").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net" || strings.HasPrefix(dep, "net/") || dep == "os/exec" || dep == "crypto/tls" || dep == "plugin" {
			t.Errorf("the policy engine links %s", dep)
		}
	}
}
