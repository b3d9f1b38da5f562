package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestScratch: scratch files (by a rule or by the writer's metadata)
// say so on HEAD, stay on the branch they were written on when it
// merges (a later change to one neither merges nor conflicts), and the
// sweep deletes them once their time to live runs out, unless the key
// was written again; each deletion is recorded.
func TestScratch(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	cl := s3Of(c, c.creds)
	c.ok("repo/create", map[string]any{"repo": "scr", "protected": false})
	c.ok("label/set", map[string]any{"repo": "scr", "glob": "tmp/**", "retention": "scratch"})
	c.ok("branch/create", map[string]any{"repo": "scr", "name": "run", "from": "main"})
	onRun := s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", "run"))
	put := func(key, body string, meta map[string]string) {
		t.Helper()
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("scr"), Key: aws.String(key), Body: strings.NewReader(body), Metadata: meta}, onRun); err != nil {
			t.Fatal(err)
		}
	}
	put("tmp/work.txt", "intermediate", nil)
	put("asked.txt", "scratch because asked", map[string]string{"nas-retention": "scratch"})
	put("out/result.txt", "the result", nil)
	h, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("scr"), Key: aws.String("tmp/work.txt")}, onRun)
	if err != nil || h.Metadata["nas-retention"] != "scratch" {
		t.Fatalf("HEAD of a scratch file: %v %v", h, err)
	}
	c.ok("commit/create", map[string]any{"repo": "scr", "branch": "run", "message": "work"})
	c.ok("merge/create", map[string]any{"repo": "scr", "from": "run", "into": "main"})
	exists := func(key string, opts ...func(*s3.Options)) bool {
		_, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("scr"), Key: aws.String(key)}, opts...)
		return err == nil
	}
	if !exists("out/result.txt") || exists("tmp/work.txt") || exists("asked.txt") {
		t.Fatal("the merge carried scratch files into main, or not the result")
	}
	put("tmp/work.txt", "changed again", nil)
	c.ok("commit/create", map[string]any{"repo": "scr", "branch": "run", "message": "more"})
	c.ok("merge/create", map[string]any{"repo": "scr", "from": "run", "into": "main"})
	if exists("tmp/work.txt") {
		t.Fatal("a later change to a scratch file merged")
	}

	g := c.srv.Gateway
	g.Branches.SetScratchTTL(time.Millisecond)
	put("tmp/late.txt", "short-lived", nil)
	put("tmp/rewritten.txt", "first", nil)
	put("tmp/rewritten.txt", "second", map[string]string{"nas-retention": "normal"}) // the rule keeps it scratch
	time.Sleep(5 * time.Millisecond)
	n, err := g.ExpireScratch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"tmp/late.txt", "tmp/rewritten.txt"} {
		if exists(k, onRun) {
			t.Errorf("%s outlived its time to live", k)
		}
	}
	if !exists("out/result.txt", onRun) {
		t.Fatal("the sweep deleted a normal file")
	}
	if n != 2 {
		t.Fatalf("the sweep deleted %d files, want 2 (the second write of tmp/rewritten.txt, and tmp/late.txt)", n)
	}
	if exists("tmp/work.txt", onRun) == false {
		t.Fatal("a scratch file written under the day-long default expired")
	}
	recs := c.ok("record/list", map[string]any{"repo": "scr", "kinds": []string{"scratch.expired"}})["records"].([]any)
	if len(recs) != 2 {
		t.Fatalf("%d scratch.expired records, want 2", len(recs))
	}
}
