package api_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/agentnas/nas/apiv1"
	nas "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/evidence"
	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/record"
)

// readsFixture is a gateway with repository "docs": on main, docs/big.md
// (10 MiB, a few headings), docs/notes.md, docs/many.md (many headings)
// and secret/x.md, committed.
type readsFixture struct {
	c     *client
	s3    *s3.Client
	owner *nas.Client
}

const notes = "# Acme\nintro\n## Renewal\nrenewed for 24 months\n## Contacts\nDana\nLuis\n"

func newReadsFixture(t *testing.T) *readsFixture {
	c := newClient(t)
	f := &readsFixture{c: c, owner: typed(c.srv, aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}),
		s3: s3.New(s3.Options{BaseEndpoint: aws.String(c.srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, "")})}
	c.ok("repo/create", map[string]any{"repo": "docs", "protected": false})
	var many strings.Builder
	for i := range 300 {
		fmt.Fprintf(&many, "# Part %d\ntext\n", i)
	}
	f.put(t, "main", map[string]string{"docs/big.md": bigMarkdown(), "docs/notes.md": notes, "docs/many.md": many.String(), "secret/x.md": "# hidden\n"})
	putRole(c, map[string]any{"repo": "docs", "role": "reader"})
	return f
}

// bigMarkdown is 10 MiB of Markdown under eight headings.
func bigMarkdown() string {
	para := strings.Repeat("All work and no play makes a long file. ", 25) + "\n\n"
	body := strings.Repeat(para, (10<<20)/8/len(para)+1)
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, "# Chapter %d\n\n%s", i+1, body)
	}
	return b.String()
}

// put writes files on br and commits them.
func (f *readsFixture) put(t *testing.T, br string, files map[string]string) {
	t.Helper()
	for k, v := range files {
		if _, err := f.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("docs"), Key: aws.String(k), Body: strings.NewReader(v)},
			s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", br))); err != nil {
			t.Fatal(err)
		}
	}
	f.c.ok("commit/create", map[string]any{"repo": "docs", "branch": br, "message": "put files"})
}

func typed(srv *nastest.Server, creds aws.Credentials) *nas.Client {
	return nas.New(nas.Config{Endpoint: srv.Endpoint, Credentials: creds, Attempts: 1})
}

// lease returns a client with a lease on main of the docs repository.
func (f *readsFixture) lease(t *testing.T, paths, actions []string, bytesRead int64) *nas.Client {
	t.Helper()
	cl, _ := f.leaseRun(t, paths, actions, bytesRead)
	return cl
}

// leaseRun is lease, with the lease's run.
func (f *readsFixture) leaseRun(t *testing.T, paths, actions []string, bytesRead int64) (*nas.Client, string) {
	t.Helper()
	lr := f.c.ok("lease/create", map[string]any{"repo": "docs", "role": "reader", "branch": "main", "paths": paths, "actions": actions,
		"budgets": map[string]any{"bytes_read": bytesRead}})["lease"].(map[string]any)
	return typed(f.c.srv, aws.Credentials{AccessKeyID: lr["access_key_id"].(string), SecretAccessKey: lr["secret_access_key"].(string), SessionToken: lr["session_token"].(string)}), lr["run"].(string)
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var ce *nas.Error
	if !errors.As(err, &ce) || ce.Code != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func read(t *testing.T, cl *nas.Client, r apiv1.FileReadRequest) *apiv1.FileReadResponse {
	t.Helper()
	r.Repo = "docs"
	out, err := cl.ReadFile(context.Background(), r)
	if err != nil {
		t.Fatalf("read %+v: %v", r, err)
	}
	return out
}

func TestBudgetedReadViews(t *testing.T) {
	f := newReadsFixture(t)
	big := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/big.md", BudgetTokens: 400})
	if big.View != apiv1.ViewOutline || big.Tokens > 400 || big.Truncated || big.Generated || !strings.Contains(big.Note, "view full needs about") ||
		!strings.Contains(big.Content, "# Chapter 8 (L") || len(big.Evidence) != 1 || big.Tokens != len(big.Content)/4+min(len(big.Content)%4, 1) {
		t.Fatalf("10 MiB read in 400 tokens: %+v", big)
	}
	many := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/many.md", View: apiv1.ViewOutline, BudgetTokens: 100})
	if !many.Truncated || many.Tokens > 100 || !strings.Contains(many.Content, "[outline cut: ") || !strings.Contains(many.Note, "cut") {
		t.Fatalf("an outline over the budget must be cut, and say so: %+v", many)
	}
	if tiny := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/many.md", BudgetTokens: 1}); !tiny.Truncated || tiny.Tokens > 1 {
		t.Fatalf("a budget of one token: %+v", tiny)
	}
	full := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/notes.md"})
	if full.View != apiv1.ViewFull || full.Content != notes || full.Truncated || full.Note != "" || full.Lines != 7 {
		t.Fatalf("full: %+v", full)
	}
	if full.Evidence[0].SHA256 != evidence.Hash([]byte(notes)) || !strings.HasSuffix(full.Evidence[0].Pointer, "@"+full.Commit+"#L1-L7") {
		t.Fatalf("full evidence: %+v", full.Evidence)
	}
	lines := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/notes.md", View: apiv1.ViewLines, Range: &apiv1.LineRange{StartLine: 3, EndLine: 4}})
	if lines.View != apiv1.ViewLines || lines.Content != "## Renewal\nrenewed for 24 months\n" || !strings.HasSuffix(lines.Evidence[0].Pointer, "#L3-L4") {
		t.Fatalf("lines: %+v", lines)
	}
	sec := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/notes.md", View: apiv1.ViewSection, Section: "Acme/Contacts"})
	if sec.View != apiv1.ViewSection || sec.Content != "## Contacts\nDana\nLuis\n" || !strings.HasSuffix(sec.Evidence[0].Pointer, "#L5-L7") {
		t.Fatalf("section: %+v", sec)
	}
	// full -> the section asked for, when only it fits.
	down := read(t, f.owner, apiv1.FileReadRequest{Path: "docs/big.md", Section: "Chapter 2", BudgetTokens: apiv1.MaxBudgetTokens})
	if down.View != apiv1.ViewSection || !strings.HasPrefix(down.Content, "# Chapter 2\n") || !strings.Contains(down.Note, "returned the section") {
		t.Fatalf("full degraded to a section: view %s note %q", down.View, down.Note)
	}
	_, err := f.owner.ReadFile(context.Background(), apiv1.FileReadRequest{Repo: "docs", Path: "docs/notes.md", View: apiv1.ViewLines, Range: &apiv1.LineRange{StartLine: 7, EndLine: 8}})
	wantCode(t, err, apiv1.CodeInvalidRange)
	for _, bad := range []apiv1.FileReadRequest{
		{View: "summary"}, {View: apiv1.ViewLines}, {View: apiv1.ViewSection}, {View: apiv1.ViewOutline, Section: "Acme"},
		{View: apiv1.ViewLines, Section: "Acme"}, {Range: &apiv1.LineRange{StartLine: 1, EndLine: 1}, Section: "Acme"},
		{BudgetTokens: -1}, {BudgetTokens: apiv1.MaxBudgetTokens + 1}, {View: apiv1.ViewSection, Section: "No such heading"},
	} {
		bad.Repo, bad.Path = "docs", "docs/notes.md"
		_, err = f.owner.ReadFile(context.Background(), bad)
		wantCode(t, err, apiv1.CodeInvalidArgument)
	}
	_, err = f.owner.ReadFile(context.Background(), apiv1.FileReadRequest{Repo: "docs", Path: "docs/none.md"})
	wantCode(t, err, apiv1.CodeNotFound)
}

func TestBudgetedReadLease(t *testing.T) {
	f := newReadsFixture(t)
	ctx := context.Background()
	lc, run := f.leaseRun(t, []string{"docs/**"}, []string{"list", "read"}, 1000)
	got := read(t, lc, apiv1.FileReadRequest{Path: "docs/notes.md", View: apiv1.ViewLines, Range: &apiv1.LineRange{StartLine: 1, EndLine: 2}})
	if got.Content != "# Acme\nintro\n" {
		t.Fatalf("lease read: %+v", got)
	}
	if rd := reads(t, f, run); len(rd) != 1 || rd[0].Path != "docs/notes.md" || rd[0].Offset != 0 || rd[0].Length != int64(len(got.Content)) || rd[0].Commit != got.Commit {
		t.Fatalf("read manifest: %+v", rd)
	}
	if left := remaining(t, f, lc); left != 1000-int64(len("# Acme\nintro\n")) {
		t.Fatalf("remaining bytes_read %d after a read of two lines", left)
	}
	_, err := lc.ReadFile(ctx, apiv1.FileReadRequest{Repo: "docs", Path: "secret/x.md"})
	wantCode(t, err, apiv1.CodeNotFound)
	_, err = lc.ReadFile(ctx, apiv1.FileReadRequest{Repo: "docs", Path: "docs/big.md", BudgetTokens: 400})
	wantCode(t, err, apiv1.CodeQuotaExceeded) // the outline is made of all 10 MiB
	if left := remaining(t, f, lc); left != 1000-int64(len("# Acme\nintro\n")) {
		t.Fatalf("a refused read was charged: %d left", left)
	}
	// A budget spent to the byte: the next read, and a dereference, answer
	// the budget error.
	spent := f.lease(t, []string{"docs/**"}, []string{"list", "read"}, int64(len(notes)))
	whole := read(t, spent, apiv1.FileReadRequest{Path: "docs/notes.md"})
	if left := remaining(t, f, spent); left != 0 || whole.View != apiv1.ViewFull {
		t.Fatalf("a full read of %d bytes left %d of the budget (%s)", len(notes), left, whole.View)
	}
	_, err = spent.ReadFile(ctx, apiv1.FileReadRequest{Repo: "docs", Path: "docs/notes.md", View: apiv1.ViewLines, Range: &apiv1.LineRange{StartLine: 1, EndLine: 1}})
	wantCode(t, err, apiv1.CodeQuotaExceeded)
	_, err = spent.Dereference(ctx, whole.Evidence[0].Pointer)
	wantCode(t, err, apiv1.CodeQuotaExceeded)
	_, err = f.lease(t, []string{"docs/**"}, []string{"list"}, 1000).ReadFile(ctx, apiv1.FileReadRequest{Repo: "docs", Path: "docs/notes.md"})
	wantCode(t, err, apiv1.CodeAccessDenied)
	_, err = lc.ReadFile(ctx, apiv1.FileReadRequest{Repo: "docs", Branch: "other", Path: "docs/notes.md"})
	wantCode(t, err, apiv1.CodeNotFound)
}

// reads is a run's read manifest.
func reads(t *testing.T, f *readsFixture, run string) []record.Read {
	t.Helper()
	ctx := context.Background()
	g := f.c.srv.Gateway
	g.Auth.FlushReads(ctx, run)
	var all []record.Read
	if err := g.Recorder.ReadManifest(ctx, run, func(r record.Read) error { all = append(all, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return all
}

// remaining is a lease's remaining read budget.
func remaining(t *testing.T, f *readsFixture, lc *nas.Client) int64 {
	t.Helper()
	var out apiv1.LeaseGetResponse
	if err := lc.Do(context.Background(), apiv1.LeaseGetRequest{}, &out); err != nil {
		t.Fatal(err)
	}
	return out.Remaining.BytesRead
}

func TestEvidencePointers(t *testing.T) {
	f := newReadsFixture(t)
	ctx := context.Background()
	lc, run := f.leaseRun(t, []string{"docs/**"}, []string{"list", "read"}, 1<<20)
	sec := read(t, lc, apiv1.FileReadRequest{Path: "docs/notes.md", View: apiv1.ViewSection, Section: "Renewal"})
	ev := sec.Evidence[0]
	// The branch moves on: the file changes in a new commit.
	f.put(t, "main", map[string]string{"docs/notes.md": "# Acme\nrewritten\n"})
	if now := read(t, lc, apiv1.FileReadRequest{Path: "docs/notes.md"}); now.Commit == sec.Commit || now.Content == notes {
		t.Fatalf("the branch did not move: %+v", now)
	}
	d, err := lc.Dereference(ctx, ev.Pointer)
	if err != nil || d.Content != "## Renewal\nrenewed for 24 months\n" || d.SHA256 != ev.SHA256 {
		t.Fatalf("dereference after the branch moved: %+v %v", d, err)
	}
	if rd := reads(t, f, run); !slices.ContainsFunc(rd, func(r record.Read) bool {
		return r.Commit == sec.Commit && r.Path == "docs/notes.md" && r.Offset == int64(len("# Acme\nintro\n"))
	}) {
		t.Fatalf("a dereference is recorded at the pointer's commit %s: %+v", sec.Commit, rd)
	}
	if v, err := lc.VerifyEvidence(ctx, ev.Pointer, ev.SHA256); err != nil || !v.Valid {
		t.Fatalf("verify with the right hash: %+v %v", v, err)
	}
	if v, err := lc.VerifyEvidence(ctx, ev.Pointer, evidence.Hash([]byte("forged"))); err != nil || v.Valid || v.Reason == "" {
		t.Fatalf("verify with a wrong hash: %+v %v", v, err)
	}
	p, _ := evidence.Parse(ev.Pointer)
	p.End = 99
	if v, err := lc.VerifyEvidence(ctx, p.String(), ev.SHA256); err != nil || v.Valid {
		t.Fatalf("verify past the end: %+v %v", v, err)
	}
	_, err = lc.Dereference(ctx, "nas://docs/no-commit")
	wantCode(t, err, apiv1.CodeInvalidArgument)
	hidden := read(t, f.owner, apiv1.FileReadRequest{Path: "secret/x.md"}).Evidence[0].Pointer
	_, err = lc.Dereference(ctx, hidden)
	wantCode(t, err, apiv1.CodeNotFound)
	_, err = lc.VerifyEvidence(ctx, hidden, ev.SHA256)
	wantCode(t, err, apiv1.CodeNotFound)
	// A path with '@', '#', '%' and a space is escaped in the pointer
	// and found again.
	f.put(t, "main", map[string]string{"docs/a@b #c%d.md": "x\ny\n"})
	odd := read(t, lc, apiv1.FileReadRequest{Path: "docs/a@b #c%d.md", View: apiv1.ViewLines, Range: &apiv1.LineRange{StartLine: 2, EndLine: 2}}).Evidence[0]
	if !strings.Contains(odd.Pointer, "/docs/a%40b%20%23c%25d.md@") {
		t.Fatalf("escaped pointer: %s", odd.Pointer)
	}
	if d, err := lc.Dereference(ctx, odd.Pointer); err != nil || d.Content != "y\n" || d.SHA256 != odd.SHA256 {
		t.Fatalf("dereference of an escaped path: %+v %v", d, err)
	}
	// Another branch's commit does not exist for the lease (the owner
	// dereferences it).
	f.c.ok("branch/create", map[string]any{"repo": "docs", "name": "other", "from": "main"})
	f.put(t, "other", map[string]string{"docs/other.md": "elsewhere\n"})
	elsewhere := read(t, f.owner, apiv1.FileReadRequest{Branch: "other", Path: "docs/other.md"}).Evidence[0].Pointer
	_, err = lc.Dereference(ctx, elsewhere)
	wantCode(t, err, apiv1.CodeNotFound)
	if d, err := f.owner.Dereference(ctx, elsewhere); err != nil || d.Content != "elsewhere\n" {
		t.Fatalf("owner dereference of another branch: %+v %v", d, err)
	}
	p.Commit = strings.Repeat("0", 64)
	_, err = lc.Dereference(ctx, p.String())
	wantCode(t, err, apiv1.CodeNotFound) // no such commit
	p.Commit = "abc"
	_, err = lc.Dereference(ctx, p.String())
	wantCode(t, err, apiv1.CodeNotFound) // not a commit ID: no such commit either
	_, err = f.owner.Dereference(ctx, p.String())
	wantCode(t, err, apiv1.CodeNotFound)
}
