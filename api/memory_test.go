package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

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

// TestMemoryTest: a Home's recall-tests.yaml runs as recalls; a case
// expecting a superseded note fails and says which it missed, a broken
// file is an invalid argument, and a Home without one is NotFound.
func TestMemoryTest(t *testing.T) {
	c := newClient(t)
	owner := typed(c.srv, aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey})
	c.ok("repo/create", map[string]any{"repo": "mem", "protected": false})
	ctx := context.Background()
	var a, b apiv1.MemoryRememberResponse
	for _, r := range []struct {
		out  *apiv1.MemoryRememberResponse
		body string
		sup  []string
	}{{&a, "The deploy window is Tuesday.\n", nil}, {&b, "The deploy window is Thursday.\n", nil}} {
		if err := owner.Do(ctx, apiv1.MemoryRememberRequest{Repo: "mem", Home: "agents/ops", Kind: apiv1.KindSemantic, Subject: "deploy",
			Body: r.body, Supersedes: r.sup}, r.out); err != nil {
			t.Fatal(err)
		}
	}
	var sup apiv1.MemoryRememberResponse
	if err := owner.Do(ctx, apiv1.MemoryRememberRequest{Repo: "mem", Home: "agents/ops", Kind: apiv1.KindSemantic, Subject: "deploy",
		Body: "The deploy window moved to Friday.\n", Supersedes: []string{a.Note.ID}}, &sup); err != nil {
		t.Fatal(err)
	}
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(c.srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, "")})
	putTests := func(yaml string) {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("mem"), Key: aws.String("agents/ops/recall-tests.yaml"),
			Body: strings.NewReader(yaml)}); err != nil {
			t.Fatal(err)
		}
		c.ok("commit/create", map[string]any{"repo": "mem", "branch": "main", "message": "recall tests"})
	}
	err := owner.Do(ctx, apiv1.MemoryTestRequest{Repo: "mem", Home: "agents/ops"}, nil)
	wantCode(t, err, apiv1.CodeNotFound)
	putTests(fmt.Sprintf("- query: deploy window Friday\n  expect: [%s]\n  top_k: 1\n- query: Thursday\n  expect: [%s]\n- query: Tuesday\n  expect: [%s]\n",
		sup.Note.ID, b.Note.ID, a.Note.ID))
	var out apiv1.MemoryTestResponse
	if err := owner.Do(ctx, apiv1.MemoryTestRequest{Repo: "mem", Home: "agents/ops"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.Passed != 2 || out.Failed != 1 || len(out.Cases) != 3 || !out.Cases[0].Pass || out.Cases[2].Pass ||
		len(out.Cases[2].Missing) != 1 || out.Cases[2].Missing[0] != a.Note.ID || out.Home != "agents/ops" {
		t.Fatalf("memory/test: %+v", out)
	}
	putTests("- query: q\n  expect: [mem_1]\n  topk: 2\n")
	err = owner.Do(ctx, apiv1.MemoryTestRequest{Repo: "mem", Home: "agents/ops"}, nil)
	wantCode(t, err, apiv1.CodeInvalidArgument)
}
