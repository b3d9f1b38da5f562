package source_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/source"
)

// TestPushThroughAGate: a run cannot push, but can ask to: its request
// waits at a gate whose card lists the plan as egress, writes nothing
// until the owner approves, and then writes exactly that plan. A plan
// that changed before the approval voids it; a denial writes nothing;
// another repository's source is not found.
func TestPushThroughAGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	for _, k := range []string{"a.txt", "b.txt"} {
		rm.put(t, "remote", "p/"+k, []byte("remote "+k))
	}
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.mkRepo(t, "other")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	otherID := gw.attach(t, "other", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	gw.owner(t, "role/put", map[string]any{"name": "agent", "repo": "data",
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write", "delete", "propose"}}}})
	l := gw.owner(t, "lease/create", map[string]any{"repo": "data", "role": "agent", "fork_from": "main", "ttl": "1h",
		"paths": []string{"ds/**"}, "actions": []string{"list", "read", "write", "delete", "propose"}})["lease"].(map[string]any)
	creds := aws.Credentials{AccessKeyID: l["access_key_id"].(string), SecretAccessKey: l["secret_access_key"].(string), SessionToken: l["session_token"].(string)}
	cl := s3Client(gw.URL, creds)
	bucket := "data"
	write := func(key, body string) {
		t.Helper()
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
		must(t, err)
	}
	commit := func() {
		t.Helper()
		if st, out := ctl(t, gw.URL, creds, "commit/create", map[string]any{"repo": "data", "branch": l["branch"], "message": "outputs"}); st != http.StatusOK {
			t.Fatalf("the run's commit: %d %v", st, out)
		}
	}
	ask := func(args map[string]any) (int, map[string]any) {
		t.Helper()
		args["reason"] = "publish the cleaned files"
		return ctl(t, gw.URL, creds, "source/push-request", args)
	}
	gateOf := func(out map[string]any) (string, map[string]any) {
		g := out["gate"].(map[string]any)
		return g["gate_id"].(string), g
	}

	write("ds/a.txt", "a, cleaned by the run")
	write("ds/new.txt", "new, from the run")
	commit()
	st, out := ask(map[string]any{"prefix": "ds/"})
	if st != http.StatusOK {
		t.Fatalf("request: %d %v", st, out)
	}
	gid, g := gateOf(out)
	card := g["card"].(map[string]any)
	action := card["action"].(map[string]any)
	var lines []string
	for _, c := range action["changes"].([]any) {
		m := c.(map[string]any)
		lines = append(lines, fmt.Sprint(m["kind"], " ", m["key"]))
	}
	sort.Strings(lines)
	if g["status"] != "pending" || action["op"] != "source.push" || action["into"] != id || !card["risk"].(map[string]any)["egress"].(bool) ||
		strings.Join(lines, ",") != "A ds/new.txt,M ds/a.txt" {
		t.Fatalf("the gate: %v", g)
	}
	if rm.body(t, "remote", "p/a.txt") != "remote a.txt" || rm.body(t, "remote", "p/new.txt") != "" {
		t.Fatal("a request wrote to the remote")
	}
	if st, again := ask(map[string]any{"id": id}); st != http.StatusOK || again["gate"].(map[string]any)["gate_id"] != gid {
		t.Fatalf("asking again: %d %v", st, again)
	}
	// Another repository's source, no source, and a source the run changed
	// nothing under answer alike.
	gw.attach(t, "data", "more/", "s3://remote/p", rm.URL, nil)
	var msgs []string
	for _, args := range []map[string]any{{"id": otherID}, {"prefix": "nowhere/"}, {"repo": "other", "prefix": "ds/"}, {"prefix": "more/"}} {
		st, out := ask(args)
		if st != http.StatusNotFound {
			t.Errorf("request %v: %d %v", args, st, out)
			continue
		}
		msgs = append(msgs, out["error"].(map[string]any)["message"].(string))
	}
	if len(msgs) == 4 && (msgs[0] != msgs[1] || msgs[1] != msgs[3]) {
		t.Errorf("the answers differ: %q", msgs)
	}
	if st, _ := ctl(t, gw.URL, creds, "gate/approve", map[string]any{"gate_id": gid}); st != http.StatusForbidden {
		t.Fatalf("the run approving its own push: %d", st)
	}

	out = gw.owner(t, "gate/approve", map[string]any{"gate_id": gid, "reason": "looks right"})
	_, g = gateOf(out)
	if p := g["push"].(map[string]any); g["status"] != "approved" || p["written"] != 2.0 || p["commit"] == "" {
		t.Fatalf("approved: %v", g)
	}
	if rm.body(t, "remote", "p/a.txt") != "a, cleaned by the run" || rm.body(t, "remote", "p/new.txt") != "new, from the run" {
		t.Fatal("the approved plan was not written")
	}

	// The attachment's branch gets a file the run never saw: a run's plan
	// holds only its own changes, not the undoing of that one.
	_, err := gw.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String("ds/owner.txt"), Body: strings.NewReader("the owner's")})
	must(t, err)
	gw.owner(t, "commit/create", map[string]any{"repo": "data", "branch": "main", "message": "the owner's file"})

	// The branch moves after the request: the approval is void.
	write("ds/b.txt", "b, cleaned")
	commit()
	st, out = ask(map[string]any{"prefix": "ds"})
	if st != http.StatusOK {
		t.Fatalf("request after the owner's commit: %d %v", st, out)
	}
	gid, g = gateOf(out)
	if ch := g["card"].(map[string]any)["action"].(map[string]any)["changes"].([]any); len(ch) != 1 || ch[0].(map[string]any)["key"] != "ds/b.txt" {
		t.Fatalf("the run's plan after the owner's commit: %v", ch)
	}
	write("ds/late.txt", "written after the card was made")
	commit()
	st, out = ctl(t, gw.URL, ownerCreds, "gate/approve", map[string]any{"gate_id": gid})
	if st != http.StatusConflict || out["error"].(map[string]any)["code"] != "ApprovalVoid" {
		t.Fatalf("approving a moved plan: %d %v", st, out)
	}
	if got := gw.owner(t, "gate/get", map[string]any{"gate_id": gid})["gate"].(map[string]any)["status"]; got != "void" {
		t.Fatalf("the moved plan's gate: %v", got)
	}
	if rm.body(t, "remote", "p/b.txt") != "remote b.txt" || rm.body(t, "remote", "p/late.txt") != "" {
		t.Fatal("a void approval wrote to the remote")
	}

	// Denied: nothing written.
	_, out = ask(map[string]any{"prefix": "ds/"})
	gid, _ = gateOf(out)
	if g := gw.owner(t, "gate/deny", map[string]any{"gate_id": gid})["gate"].(map[string]any); g["status"] != "denied" {
		t.Fatalf("denied: %v", g)
	}
	if rm.body(t, "remote", "p/b.txt") != "remote b.txt" {
		t.Fatal("a denied request wrote to the remote")
	}
	recs := gw.owner(t, "record/list", map[string]any{"repo": "data", "kinds": []string{"source.push"}})["records"].([]any)
	if len(recs) != 1 {
		t.Fatalf("pushes recorded: %v", recs)
	}
}
