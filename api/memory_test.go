package api_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/nastest"
)

// TestRememberRecall: the owner remembers two notes, the second
// superseding the first; recall hides the old one unless asked, and a
// bad source is refused.
func TestRememberRecall(t *testing.T) {
	c := newClient(t)
	owner := typed(c.srv, aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey})
	c.ok("repo/create", map[string]any{"repo": "mem", "protected": false})
	ctx := context.Background()
	var a, b apiv1.MemoryRememberResponse
	if err := owner.Do(ctx, apiv1.MemoryRememberRequest{Repo: "mem", Home: "agents/cleo", Kind: apiv1.KindSemantic, Subject: "customer/acme",
		Body: "Acme's champion is Dana.\n"}, &a); err != nil {
		t.Fatal(err)
	}
	if a.Path != "agents/cleo/memory/notes/"+a.Note.ID+".md" || a.Quarantined || a.Commit == "" || a.Note.Origin != "owner" || !a.Note.Reviewed {
		t.Fatalf("remember: %+v", a)
	}
	if err := owner.Do(ctx, apiv1.MemoryRememberRequest{Repo: "mem", Home: "agents/cleo", Kind: apiv1.KindSemantic, Subject: "customer/acme",
		Body: "Acme's champion is Luis.\n", Supersedes: []string{a.Note.ID}}, &b); err != nil {
		t.Fatal(err)
	}
	var r apiv1.MemoryRecallResponse
	if err := owner.Do(ctx, apiv1.MemoryRecallRequest{Repo: "mem", Home: "agents/cleo", Query: "champion"}, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 1 || r.Notes[0].ID != b.Note.ID || r.Notes[0].Evidence.SHA256 == "" || r.Truncated {
		t.Fatalf("recall: %+v", r)
	}
	if err := owner.Do(ctx, apiv1.MemoryRecallRequest{Repo: "mem", Home: "agents/cleo", Query: "champion", IncludeSuperseded: true, BudgetTokens: 7}, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 2 || !r.Truncated || r.Tokens > 7 {
		t.Fatalf("recall with superseded, small budget: %+v", r)
	}
	for _, n := range r.Notes {
		if n.ID == a.Note.ID && (len(n.SupersededBy) != 1 || n.SupersededBy[0] != b.Note.ID) {
			t.Fatalf("superseded_by: %+v", n)
		}
	}
	err := owner.Do(ctx, apiv1.MemoryRememberRequest{Repo: "mem", Home: "agents/cleo", Kind: apiv1.KindSemantic, Subject: "s", Body: "x",
		Sources: []string{"nas://mem/nope.md@" + a.Commit + "#L1-L1"}}, nil)
	wantCode(t, err, apiv1.CodeInvalidArgument)
}
