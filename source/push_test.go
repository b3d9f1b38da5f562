package source_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/source"
)

// remoteBody reads key of bucket from the remote ("" when it is gone).
func (rm *remote) body(t testing.TB, bucket, key string) string {
	t.Helper()
	out, err := rm.cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if _, st := errCode(err); st == http.StatusNotFound {
		return ""
	}
	must(t, err)
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	must(t, err)
	return string(b)
}

// TestPushWritesBack: a push writes a run's committed changes back to the
// remote (a put over a pinned object, a new object, a delete), never over
// an object that changed at the remote (a conflict, listed), re-pins what
// it wrote on the attachment's branch, is recorded, and is the owner's
// alone; a dry run writes nothing.
func TestPushWritesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	for _, k := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		rm.put(t, "remote", "p/"+k, []byte("remote "+k))
	}
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	gw.owner(t, "branch/create", map[string]any{"repo": "data", "name": "run", "from": "main"})
	run := func(key, body string) {
		_, err := gw.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data_run"), Key: aws.String(key), Body: strings.NewReader(body),
			ContentType: aws.String("text/plain")})
		must(t, err)
	}
	run("ds/a.txt", "a, edited by the run")
	run("ds/new.txt", "written by the run")
	run("ds/c.txt", "c, edited by the run")
	run("elsewhere.txt", "not under the attachment")
	_, err := gw.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("data_run"), Key: aws.String("ds/b.txt")})
	must(t, err)
	_, err = gw.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data_run"), Key: aws.String("ds/secret.txt"), Body: strings.NewReader("sealed"),
		Metadata: map[string]string{"nas-retention": "sensitive"}})
	must(t, err)
	run("ds/key.pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq0\n-----END RSA PRIVATE KEY-----\n")
	gw.owner(t, "commit/create", map[string]any{"repo": "data", "branch": "run", "message": "the run's outputs"})
	rm.put(t, "remote", "p/c.txt", []byte("c, changed at the remote meanwhile"))

	results := func(out map[string]any) []string {
		var got []string
		for _, a := range out["actions"].([]any) {
			m := a.(map[string]any)
			got = append(got, fmt.Sprintf("%s %s %s", m["op"], m["key"], m["result"]))
		}
		sort.Strings(got)
		return got
	}
	dry := gw.owner(t, "source/push", map[string]any{"id": id, "from": "run", "dry_run": true})
	want := "delete ds/b.txt would write,put ds/a.txt would write,put ds/c.txt would write,put ds/key.pem skipped,put ds/new.txt would write,put ds/secret.txt skipped"
	if got := strings.Join(results(dry), ","); got != want {
		t.Fatalf("dry run: %s, want %s", got, want)
	}
	if rm.body(t, "remote", "p/a.txt") != "remote a.txt" || rm.body(t, "remote", "p/b.txt") != "remote b.txt" {
		t.Fatal("a dry run wrote to the remote")
	}

	// Not for a lease, whatever it may read.
	gw.owner(t, "role/put", map[string]any{"name": "agent", "repo": "data", "view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write"}}}})
	l := gw.owner(t, "lease/create", map[string]any{"repo": "data", "role": "agent", "fork_from": "main", "ttl": "1h",
		"paths": []string{"**"}, "actions": []string{"list", "read", "write"}})["lease"].(map[string]any)
	creds := aws.Credentials{AccessKeyID: l["access_key_id"].(string), SecretAccessKey: l["secret_access_key"].(string), SessionToken: l["session_token"].(string)}
	if st, _ := ctl(t, gw.URL, creds, "source/push", map[string]any{"id": id, "from": "run"}); st != http.StatusForbidden {
		t.Fatalf("a lease's push: %d", st)
	}

	out := gw.owner(t, "source/push", map[string]any{"id": id, "from": "run"})
	want = "delete ds/b.txt written,put ds/a.txt written,put ds/c.txt conflict,put ds/key.pem skipped,put ds/new.txt written,put ds/secret.txt skipped"
	if got := strings.Join(results(out), ","); got != want || out["written"] != 3.0 || out["conflicts"] != 1.0 || out["commit"] == "" {
		t.Fatalf("push: %s (%v), want %s", got, out, want)
	}
	for key, body := range map[string]string{"p/a.txt": "a, edited by the run", "p/new.txt": "written by the run", "p/b.txt": "",
		"p/c.txt": "c, changed at the remote meanwhile", "p/d.txt": "remote d.txt", "p/secret.txt": "", "p/key.pem": ""} {
		if got := rm.body(t, "remote", key); got != body {
			t.Errorf("remote %s: %q, want %q", key, got, body)
		}
	}

	// Re-pinned: main reads what was written (fetched again), lists no
	// b.txt, and a refresh finds only c.txt's drift.
	mustGet(t, gw.S3, "data", "ds/a.txt", []byte("a, edited by the run"))
	mustGet(t, gw.S3, "data", "ds/new.txt", []byte("written by the run"))
	if _, err := get(t, gw.S3, "data", "ds/b.txt", ""); err == nil {
		t.Fatal("main still holds the deleted b.txt")
	}
	info := gw.refresh(t, id)
	if info["changed"] != 1.0 || info["added"] != 0.0 || info["removed"] != 0.0 {
		t.Fatalf("refresh after the push: %v", info)
	}
	recs := gw.owner(t, "record/list", map[string]any{"repo": "data", "kinds": []string{"source.push"}})["records"].([]any)
	if len(recs) != 1 || !strings.Contains(fmt.Sprint(recs[0]), `put "ds/new.txt"`) {
		t.Fatalf("records of the push: %v", recs)
	}
	// The re-pin is a commit recorded like an attach's.
	if commits := gw.owner(t, "record/list", map[string]any{"commit": out["commit"], "kinds": []string{"commit"}})["records"].([]any); len(commits) != 1 {
		t.Fatalf("records of the re-pin commit %v: %v", out["commit"], commits)
	}
	// The attachment's own branch cannot push (its changes are the pins).
	if st, _ := ctl(t, gw.URL, ownerCreds, "source/push", map[string]any{"id": id, "from": "main"}); st != http.StatusBadRequest {
		t.Fatalf("a push from main: %d", st)
	}
}

// TestPushRecordsLongKeys: a push of many long keys is recorded (its
// record names the first keys, within a record's limits) and written.
func TestPushRecordsLongKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.put(t, "remote", "p/seed", []byte("seed"))
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	id := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)["id"].(string)
	gw.owner(t, "branch/create", map[string]any{"repo": "data", "name": "run", "from": "main"})
	for i := range 24 {
		key := fmt.Sprintf("ds/%02d-%s", i, strings.Repeat("k", 900))
		_, err := gw.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data_run"), Key: aws.String(key), Body: strings.NewReader("x")})
		must(t, err)
	}
	gw.owner(t, "commit/create", map[string]any{"repo": "data", "branch": "run", "message": "long keys"})
	if out := gw.owner(t, "source/push", map[string]any{"id": id, "from": "run"}); out["written"] != 24.0 {
		t.Fatalf("push of 24 long keys: %v", out["written"])
	}
	recs := gw.owner(t, "record/list", map[string]any{"repo": "data", "kinds": []string{"source.push"}})["records"].([]any)
	if len(recs) != 1 || !strings.Contains(fmt.Sprint(recs[0]), "count:24") {
		t.Fatalf("records of the push: %v", recs)
	}
}
