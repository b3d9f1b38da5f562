package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// narrowFixture is a protected main with three files and a run's
// proposal that changes two, deletes one and adds a binary file.
func narrowFixture(t *testing.T) (c, lc *client, gid, digest string) {
	t.Helper()
	c = newClient(t)
	ctx := context.Background()
	c.ok("repo/create", map[string]any{"repo": "nar", "protected": false})
	owner := s3Of(c, c.creds)
	put := func(cl *s3.Client, k, v string) {
		t.Helper()
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("nar"), Key: aws.String(k), Body: strings.NewReader(v)}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	put(owner, "docs/a.md", "one\ntwo\nthree\n")
	put(owner, "docs/b.md", "bee\n")
	put(owner, "docs/old.md", "old\n")
	c.ok("commit/create", map[string]any{"repo": "nar", "branch": "main", "message": "seed"})
	c.ok("branch/protect", map[string]any{"repo": "nar", "name": "main"})
	lc, _ = leaseClient(t, c, map[string]any{"repo": "nar", "role": "dora", "fork_from": "main", "paths": []string{"docs/**"},
		"actions": []string{"list", "read", "write", "delete", "propose"}})
	run := s3Of(c, lc.creds)
	put(run, "docs/a.md", "one\nTWO\nthree\n")
	put(run, "docs/b.md", "bee bee\n")
	put(run, "docs/img.bin", "\x00\x01\x02binary")
	if _, err := run.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("nar"), Key: aws.String("docs/old.md")}); err != nil {
		t.Fatal(err)
	}
	p := lc.ok("propose/create", map[string]any{"repo": "nar", "into": "main", "intent": "edit the docs"})["proposal"].(map[string]any)
	return c, lc, p["gate_id"].(string), p["diff_sha256"].(string)
}

func TestGateDiff(t *testing.T) {
	c, lc, gid, _ := narrowFixture(t)
	d := c.ok("gate/diff", map[string]any{"gate_id": gid, "path": "docs/a.md"})
	if d["text"] != true || d["kind"] != "M" || !strings.Contains(d["unified"].(string), "-two\n+TWO\n") {
		t.Fatalf("text diff: %v", d)
	}
	d = c.ok("gate/diff", map[string]any{"gate_id": gid, "path": "docs/img.bin"})
	if d["text"] != false || d["reason"] != "binary content" || d["old"].(map[string]any)["present"] != false ||
		len(d["new"].(map[string]any)["sha256"].(string)) != 64 {
		t.Fatalf("binary diff: %v", d)
	}
	d = c.ok("gate/diff", map[string]any{"gate_id": gid, "path": "docs/old.md"})
	if d["kind"] != "D" || !strings.Contains(d["unified"].(string), "-old\n") {
		t.Fatalf("delete diff: %v", d)
	}
	c.fails("gate/diff", map[string]any{"gate_id": gid, "path": "docs/nope.md"}, 404, "NotFound")
	c.fails("gate/diff", map[string]any{"gate_id": gid, "path": "../../etc/passwd"}, 404, "NotFound")
	lc.fails("gate/diff", map[string]any{"gate_id": gid, "path": "docs/a.md"}, 403, "AccessDenied")
}

func TestApproveNarrowed(t *testing.T) {
	c, lc, gid, digest := narrowFixture(t)
	svc := c.srv.Gateway.Branches
	ctx := context.Background()
	c.fails("gate/approve", map[string]any{"gate_id": gid, "diff_sha256": digest, "paths": []string{"docs/a.md", "src/x.go"}}, 400, "InvalidArgument")
	c.fails("gate/approve", map[string]any{"gate_id": gid, "paths": []string{"docs/a.md"}}, 400, "InvalidArgument")
	c.fails("gate/approve", map[string]any{"gate_id": gid, "diff_sha256": strings.Repeat("0", 64), "paths": []string{"docs/a.md"}}, 409, "Conflict")
	c.fails("gate/approve", map[string]any{"gate_id": gid, "diff_sha256": strings.Repeat("0", 64)}, 409, "Conflict")
	c.fails("gate/deny", map[string]any{"gate_id": gid, "diff_sha256": digest, "paths": []string{"docs/a.md"}}, 400, "InvalidArgument")
	g := c.ok("gate/approve", map[string]any{"gate_id": gid, "diff_sha256": digest, "paths": []string{"docs/a.md", "docs/old.md"}})["gate"].(map[string]any)
	if g["status"] != "approved" || g["merge_commit"] == "" || len(g["approved_paths"].([]any)) != 2 {
		t.Fatalf("narrowed approval: %v", g)
	}
	if e, err := svc.Get(ctx, "nar", "main", "docs/a.md"); err != nil || e.Size != int64(len("one\nTWO\nthree\n")) {
		t.Fatalf("docs/a.md on main: %v %v", e, err)
	}
	if _, err := svc.Get(ctx, "nar", "main", "docs/old.md"); err == nil {
		t.Fatal("the chosen delete did not merge")
	}
	if e, err := svc.Get(ctx, "nar", "main", "docs/b.md"); err != nil || e.Size != 4 {
		t.Fatalf("docs/b.md, not chosen, changed on main: %v %v", e, err)
	}
	if _, err := svc.Get(ctx, "nar", "main", "docs/img.bin"); err == nil {
		t.Fatal("docs/img.bin, not chosen, merged")
	}
	// What was left out can still be proposed: only it remains.
	p := lc.ok("propose/create", map[string]any{"repo": "nar", "into": "main", "intent": "the rest"})["proposal"].(map[string]any)
	var keys []string
	for _, l := range p["changes"].([]any) {
		keys = append(keys, l.(map[string]any)["key"].(string))
	}
	if strings.Join(keys, " ") != "docs/b.md docs/img.bin" {
		t.Fatalf("proposed after the narrowed merge: %v (%v)", keys, p)
	}
}
