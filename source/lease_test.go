package source_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/source"
)

// TestLeaseOverAnAttachedPrefix: a lease sees only its paths of a source,
// reading them materialises them as for anyone, and nothing it can call
// reaches the remote's location or credentials.
func TestLeaseOverAnAttachedPrefix(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.put(t, "remote", "src/a/1.txt", []byte("one"))
	rm.put(t, "remote", "src/a/2.txt", []byte("two"))
	rm.put(t, "remote", "src/b/secret.txt", []byte("not for the run"))
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	info := gw.attach(t, "data", "ds/", "s3://remote/src", rm.URL, nil)
	id := info["id"].(string)

	gw.owner(t, "role/put", map[string]any{"name": "agent", "repo": "data",
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read"}}}})
	out := gw.owner(t, "lease/create", map[string]any{"repo": "data", "role": "agent", "fork_from": "main", "ttl": "1h",
		"paths": []string{"ds/a/**"}, "actions": []string{"list", "read"}})
	l := out["lease"].(map[string]any)
	creds := aws.Credentials{AccessKeyID: l["access_key_id"].(string), SecretAccessKey: l["secret_access_key"].(string),
		SessionToken: l["session_token"].(string)}
	cl := s3Client(gw.URL, creds)

	keys := listKeys(t, cl, "data", "")
	got := []string{}
	for k := range keys {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"ds/a/1.txt", "ds/a/2.txt"}) {
		t.Fatalf("the lease lists %q", got)
	}
	g0 := rm.gets.Load()
	o, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("ds/a/1.txt")})
	must(t, err)
	o.Body.Close()
	if rm.gets.Load()-g0 != 1 {
		t.Fatal("the lease's first read did not materialise the object")
	}
	for _, k := range []string{"ds/b/secret.txt", "ds/b/", "ds/c"} {
		_, err := get(t, cl, "data", k, "")
		wantCode(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = cl.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String(k)})
		if _, st := errCode(err); st != http.StatusNotFound {
			t.Fatalf("HEAD %s by the lease: %v", k, err)
		}
	}
	_, err = cl.CopyObject(context.Background(), &s3.CopyObjectInput{Bucket: aws.String("data"), Key: aws.String("ds/a/x"),
		CopySource: aws.String("data/ds/b/secret.txt")})
	if err == nil {
		t.Fatal("the lease copied a hidden source object")
	}
	if rm.gets.Load()-g0 != 1 {
		t.Fatalf("requests outside the lease's view reached the remote (%d GETs)", rm.gets.Load()-g0)
	}

	// No source verb answers a lease.
	for _, c := range []struct {
		op   string
		args map[string]any
	}{
		{"source/list", map[string]any{}},
		{"source/get", map[string]any{"id": id}},
		{"source/refresh", map[string]any{"id": id}},
		{"source/remove", map[string]any{"id": id}},
		{"source/prefetch", map[string]any{"id": id}},
		{"source/prefetch", map[string]any{"id": id, "cancel": true}},
		{"source/status", map[string]any{"id": id}},
		{"source/add", map[string]any{"repo": "data", "prefix": "mine/", "url": "s3://remote/src", "endpoint": rm.URL}},
		{"source/add", map[string]any{"repo": "data", "prefix": "etc/", "url": "dir:/etc"}},
	} {
		st, out := ctl(t, gw.URL, creds, c.op, c.args)
		if st != http.StatusForbidden {
			t.Fatalf("%s by a lease: %d %v", c.op, st, out)
		}
		assertNoRemote(t, rm, out)
	}

	// What a lease sees of a remote failure names neither the remote nor
	// its credentials.
	rm.put(t, "remote", "src/a/2.txt", []byte("two, changed"))
	_, err = get(t, cl, "data", "ds/a/2.txt", "")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
	assertNoRemote(t, rm, err.Error())
	if _, ok := gw.owner(t, "source/get", map[string]any{"id": id})["source"].(map[string]any)["secret_key"]; ok {
		t.Fatal("source/get shows the secret to the owner")
	}
}

// assertNoRemote fails if v mentions the remote's address or credentials.
func assertNoRemote(t *testing.T, rm *remote, v any) {
	t.Helper()
	s := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(stringify(v)), " ", ""))
	for _, bad := range []string{strings.TrimPrefix(rm.URL, "http://"), "remote-key", "remote-secret", "s3://remote"} {
		if strings.Contains(s, strings.ToLower(bad)) {
			t.Fatalf("a lease saw %q in %s", bad, s)
		}
	}
}

func stringify(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		var b strings.Builder
		for k, e := range x {
			b.WriteString(k + "=" + stringify(e) + ";")
		}
		return b.String()
	}
	return ""
}
