package api_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/agentnas/nas/apiv1"
)

// TestForget (L3.4): a legal hold blocks forgetting and is recorded;
// once lifted, a dry run changes nothing, and forgetting removes the
// file and the notes derived from it on every branch, protected main
// included, deletes the search index, and reports what it did not cover.
func TestForget(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	owner := typed(c.srv, c.creds)
	cl := s3Of(c, c.creds)
	c.ok("repo/create", map[string]any{"repo": "fgt", "protected": false})
	for k, v := range map[string]string{"crm/acme.md": "# Acme\nDana's phone is 555-0100\n", "crm/other.md": "# Other\n"} {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fgt"), Key: aws.String(k), Body: strings.NewReader(v)}); err != nil {
			t.Fatal(err)
		}
	}
	cm := c.ok("commit/create", map[string]any{"repo": "fgt", "branch": "main", "message": "crm"})["commit"].(map[string]any)["id"].(string)
	for _, r := range []apiv1.MemoryRememberRequest{
		{Repo: "fgt", Home: "agents/cleo", Kind: apiv1.KindSemantic, Subject: "crm", Body: "Dana's number is on file.\n", Sources: []string{"nas://fgt/crm/acme.md@" + cm + "#L2-L2"}},
		{Repo: "fgt", Home: "agents/cleo", Kind: apiv1.KindSemantic, Subject: "customer/acme", Body: "Acme is a customer.\n"},
		{Repo: "fgt", Home: "agents/cleo", Kind: apiv1.KindSemantic, Subject: "weather", Body: "It rains.\n"},
	} {
		if err := owner.Do(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("branch/create", map[string]any{"repo": "fgt", "name": "dev", "from": "main"})
	c.ok("branch/protect", map[string]any{"repo": "fgt", "name": "main"})
	c.ok("checkpoint/create", map[string]any{"repo": "fgt", "branch": "main", "name": "before"})
	c.ok("search/query", map[string]any{"repo": "fgt", "query": "Dana"})

	c.ok("hold/set", map[string]any{"repo": "fgt", "glob": "crm/**", "reason": "case 17"})
	c.fails("forget/run", map[string]any{"repo": "fgt", "paths": []string{"crm/acme.md"}}, 403, "AccessDenied")
	c.ok("hold/delete", map[string]any{"repo": "fgt", "glob": "crm/**"})
	var dry apiv1.ForgetReport
	if err := owner.Do(ctx, apiv1.ForgetRequest{Repo: "fgt", Paths: []string{"crm/acme.md"}, Subject: "customer/acme", DryRun: true}, &dry); err != nil {
		t.Fatal(err)
	}
	if dry.State != "dry_run" || dry.Report.FilesRemoved != 2 || dry.Report.DerivedRemoved.Notes != 4 || len(dry.Removed["main"]) != 3 {
		t.Fatalf("dry run: %+v", dry)
	}
	get := func(br, key string) error {
		_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("fgt"), Key: aws.String(key)}, s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", br)))
		return err
	}
	if err := get("main", "crm/acme.md"); err != nil {
		t.Fatalf("a dry run removed the file: %v", err)
	}
	var rep apiv1.ForgetReport
	if err := owner.Do(ctx, apiv1.ForgetRequest{Repo: "fgt", Paths: []string{"crm/acme.md"}, Subject: "customer/acme"}, &rep); err != nil {
		t.Fatal(err)
	}
	for _, nc := range []string{"copies outside the NAS", "model provider logs", "model weights"} {
		if !slices.Contains(rep.Report.NotCovered, nc) {
			t.Errorf("not_covered lacks %q: %v", nc, rep.Report.NotCovered)
		}
	}
	if rep.Report.DerivedRemoved.Indexes != 1 || len(rep.Commits) != 2 || rep.State != "done" || len(rep.Report.SnapshotsPending) != 0 ||
		!strings.HasPrefix(rep.Report.History, "rewritten") || rep.Report.Collected == nil || rep.Report.Collected.Commits == 0 {
		t.Fatalf("report: %+v", rep)
	}
	checkHistoryForgotten(t, c, cm)
	for _, br := range []string{"main", "dev"} {
		for _, k := range rep.Removed[br] {
			if err := get(br, k); !isNoSuchKey(err) {
				t.Errorf("%s on %s after forgetting: %v", k, br, err)
			}
		}
		if err := get(br, "crm/other.md"); err != nil {
			t.Errorf("crm/other.md on %s: %v", br, err)
		}
	}
	var notes apiv1.ObjectListResponse
	if err := owner.Do(ctx, apiv1.ObjectListRequest{Repo: "fgt", Branch: "main", Prefix: "agents/cleo/memory/notes/"}, &notes); err != nil || len(notes.Objects) != 1 {
		t.Fatalf("notes left on main: %+v %v (want the weather note)", notes.Objects, err)
	}
	recs := c.ok("record/list", map[string]any{"repo": "fgt", "kinds": []string{"forget", "hold.set", "hold.lifted"}})["records"].([]any)
	if len(recs) != 3 {
		t.Fatalf("%d forget and hold records, want 3", len(recs))
	}
	c.fails("forget/run", map[string]any{"repo": "fgt", "paths": []string{}}, 400, "InvalidArgument")
}

// checkHistoryForgotten checks that the history no longer holds
// crm/acme.md: the old commit is gone, the checkpoint was rewritten
// without it, and no version of it is listed.
func checkHistoryForgotten(t *testing.T, c *client, old string) {
	t.Helper()
	c.fails("diff/list", map[string]any{"repo": "fgt", "from": old, "to": "main"}, 404, "NotFound")
	cp := c.ok("checkpoint/list", map[string]any{"repo": "fgt", "branch": "main"})["checkpoints"].([]any)[0].(map[string]any)
	if cp["commit"] == old {
		t.Fatal("the checkpoint still names the old commit")
	}
	for _, ch := range c.ok("diff/list", map[string]any{"repo": "fgt", "from": cp["commit"], "to": "main"})["changes"].([]any) {
		if strings.HasPrefix(ch.(map[string]any)["key"].(string), "crm/acme") {
			t.Fatalf("the rewritten checkpoint differs from main by the forgotten file: %v", ch)
		}
	}
	vs, err := s3Of(c, c.creds).ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String("fgt"), Prefix: aws.String("crm/acme")})
	if err != nil || len(vs.Versions)+len(vs.DeleteMarkers) != 0 {
		t.Fatalf("versions of the forgotten file: %+v %v", vs, err)
	}
}

// TestForgetKeepHistory: keep_history removes the file from the heads
// and says plainly that the history still holds it.
func TestForgetKeepHistory(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	c.ok("repo/create", map[string]any{"repo": "fgk", "protected": false})
	if _, err := s3Of(c, c.creds).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fgk"), Key: aws.String("a.md"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	cm := c.ok("commit/create", map[string]any{"repo": "fgk", "branch": "main", "message": "a"})["commit"].(map[string]any)["id"].(string)
	c.ok("checkpoint/create", map[string]any{"repo": "fgk", "branch": "main", "name": "before"})
	var rep apiv1.ForgetReport
	if err := typed(c.srv, c.creds).Do(ctx, apiv1.ForgetRequest{Repo: "fgk", Paths: []string{"a.md"}, KeepHistory: true}, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.State != "pending_history" || len(rep.Report.SnapshotsPending) != 1 || !strings.HasPrefix(rep.Report.History, "kept") || rep.Report.Collected != nil {
		t.Fatalf("report: %+v", rep)
	}
	ch := c.ok("diff/list", map[string]any{"repo": "fgk", "from": cm, "to": "main"})["changes"].([]any)
	if len(ch) != 1 {
		t.Fatalf("the kept history should still differ by a.md: %v", ch)
	}
}

// TestForgetRequest: an agent asks to forget and never forgets: its
// request waits at a gate naming the paths; it cannot approve it; a
// legal hold makes the owner's approval fail and leaves it pending; the
// approval runs the forget; a denied request forgets nothing.
func TestForgetRequest(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	cl := s3Of(c, c.creds)
	c.ok("repo/create", map[string]any{"repo": "fgr", "protected": false})
	for _, k := range []string{"crm/acme.md", "crm/keep.md"} {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fgr"), Key: aws.String(k), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	c.ok("commit/create", map[string]any{"repo": "fgr", "branch": "main", "message": "crm"})
	lc, _ := leaseClient(t, c, map[string]any{"repo": "fgr", "role": "cleo", "fork_from": "main", "paths": []string{"crm/**"}, "actions": []string{"read"}})
	lc.fails("forget/run", map[string]any{"repo": "fgr", "paths": []string{"crm/acme.md"}}, 403, "AccessDenied")
	lc.fails("forget/request", map[string]any{"paths": []string{"finance/**"}, "reason": "outside the view"}, 403, "AccessDenied")
	lc.fails("forget/request", map[string]any{"paths": []string{"**"}, "reason": "wider than the view"}, 403, "AccessDenied")
	g := lc.ok("forget/request", map[string]any{"paths": []string{"crm/acme.md"}, "reason": "the customer asked"})["gate"].(map[string]any)
	action := g["card"].(map[string]any)["action"].(map[string]any)
	if g["status"] != "pending" || action["op"] != "forget" || action["paths"].([]any)[0] != "crm/acme.md" {
		t.Fatalf("the request: %v", g)
	}
	id := g["gate_id"].(string)
	lc.fails("gate/approve", map[string]any{"gate_id": id}, 403, "AccessDenied")
	c.ok("hold/set", map[string]any{"repo": "fgr", "glob": "crm/acme.md", "reason": "litigation"})
	c.fails("gate/approve", map[string]any{"gate_id": id}, 403, "AccessDenied")
	if st := c.ok("gate/get", map[string]any{"gate_id": id})["gate"].(map[string]any)["status"]; st != "pending" {
		t.Fatalf("a held forget's gate is %v", st)
	}
	c.ok("hold/delete", map[string]any{"repo": "fgr", "glob": "crm/acme.md"})
	ok := c.ok("gate/approve", map[string]any{"gate_id": id, "reason": "verified"})["gate"].(map[string]any)
	if ok["status"] != "approved" || ok["forget_id"] == "" {
		t.Fatalf("approved: %v", ok)
	}
	if _, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("fgr"), Key: aws.String("crm/acme.md")}); !isNoSuchKey(err) {
		t.Fatalf("after the approval: %v", err)
	}
	g2 := lc.ok("forget/request", map[string]any{"paths": []string{"crm/keep.md"}, "reason": "no"})["gate"].(map[string]any)
	c.ok("gate/deny", map[string]any{"gate_id": g2["gate_id"]})
	if _, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("fgr"), Key: aws.String("crm/keep.md")}); err != nil {
		t.Fatalf("a denied request forgot: %v", err)
	}
}

// TestForgetRequestOutsideViewRecorded: a lease's request to forget a
// glob outside its view is refused by the door, naming the glob, and the
// refusal is in the run's flight record as a denied event with its rule.
func TestForgetRequestOutsideViewRecorded(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "fgd", "protected": false})
	lc, l := leaseClient(t, c, map[string]any{"repo": "fgd", "role": "cleo", "fork_from": "main", "paths": []string{"crm/**"}, "actions": []string{"read"}})
	st, out := lc.call("forget/request", map[string]any{"paths": []string{"crm/a.md", "finance/**"}, "reason": "outside the view"})
	e, _ := out["error"].(map[string]any)
	if msg, _ := e["message"].(string); st != 403 || e["code"] != "AccessDenied" || !strings.Contains(msg, `"finance/**" is not among them`) {
		t.Fatalf("forget/request outside the view: %d %v", st, out)
	}
	recs := c.ok("record/list", map[string]any{"run": l["run"], "kinds": []string{"denied"}})["records"].([]any)
	for _, r := range recs {
		ev := r.(map[string]any)
		d, _ := ev["decision"].(map[string]any)
		s, _ := ev["subject"].(map[string]any)
		if s["path"] == "finance/**" && strings.Contains(fmt.Sprint(d["rule"]), "finance/**") && ev["details"].(map[string]any)["action"] == "forget/request" {
			return
		}
	}
	t.Fatalf("no denied event for the request among %v", recs)
}
