package api_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
)

// TestDirectoryOperations: object/list and object/lookup, for the owner
// and under a lease, which sees only its view: hidden keys, hidden
// "directories" and near-prefix names never show, whatever the prefix or
// cursor asked for.
func TestDirectoryOperations(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	cl := s3.New(s3.Options{BaseEndpoint: aws.String(c.srv.Endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(nastest.AccessKey, nastest.SecretKey, "")})
	c.ok("repo/create", map[string]any{"repo": "dirs", "protected": false})
	for _, k := range []string{"pub/a.txt", "pub/b/c.txt", "pub/empty/", "pubx/secret.txt", "priv/x.txt", "priv/deep/y.txt", "top.txt"} {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("dirs"), Key: aws.String(k), Body: bytes.NewReader([]byte(k)),
			Metadata: map[string]string{"mode": "33188"}}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(page map[string]any) []string {
		var out []string
		for _, o := range page["objects"].([]any) {
			out = append(out, o.(map[string]any)["key"].(string))
		}
		for _, p := range page["prefixes"].([]any) {
			out = append(out, p.(string))
		}
		slices.Sort(out)
		return out
	}
	root := c.ok("object/list", map[string]any{"repo": "dirs", "delimiter": "/"})
	if got := names(root); !slices.Equal(got, []string{"priv/", "pub/", "pubx/", "top.txt"}) {
		t.Fatalf("owner's root: %v", got)
	}
	pub := c.ok("object/list", map[string]any{"repo": "dirs", "prefix": "pub/", "delimiter": "/"})
	if got := names(pub); !slices.Equal(got, []string{"pub/a.txt", "pub/b/", "pub/empty/"}) {
		t.Fatalf("owner's pub/: %v", got)
	}
	if m := pub["objects"].([]any)[0].(map[string]any)["meta"].(map[string]any); m["mode"] != "33188" {
		t.Fatalf("a listing carries metadata: %v", m)
	}
	// Paging: a cursor continues, and must lie under the prefix.
	p1 := c.ok("object/list", map[string]any{"repo": "dirs", "prefix": "pub/", "delimiter": "/", "limit": 1})
	if p1["next_cursor"] != "pub/a.txt" {
		t.Fatalf("page 1: %v", p1)
	}
	p2 := c.ok("object/list", map[string]any{"repo": "dirs", "prefix": "pub/", "delimiter": "/", "limit": 5, "cursor": p1["next_cursor"]})
	if got := names(p2); !slices.Equal(got, []string{"pub/b/", "pub/empty/"}) {
		t.Fatalf("page 2: %v", got)
	}
	c.fails("object/list", map[string]any{"repo": "dirs", "prefix": "pub/", "cursor": "priv/"}, 400, "InvalidArgument")

	look := func(c *client, key string) (obj, dir, marker bool) {
		t.Helper()
		r := c.ok("object/lookup", map[string]any{"repo": "dirs", "key": key})
		return r["object"] != nil, r["dir"].(bool), r["marker"].(bool)
	}
	for key, want := range map[string][3]bool{
		"pub/a.txt": {true, false, false}, "pub/b": {false, true, false}, "pub/empty": {false, true, true},
		"pub": {false, true, false}, "nothing": {false, false, false}, "pub/a": {false, false, false},
	} {
		if o, d, m := look(c, key); [3]bool{o, d, m} != want {
			t.Errorf("owner lookup %q: %v %v %v, want %v", key, o, d, m, want)
		}
	}
	c.fails("object/lookup", map[string]any{"repo": "dirs", "key": "pub/"}, 400, "InvalidArgument")

	// A lease on pub/**: nothing else exists for it.
	lc, _ := leaseClient(t, c, map[string]any{"repo": "dirs", "role": "lister", "branch": "main", "paths": []string{"pub/**"}, "actions": []string{"list", "read"}})
	if got := names(lc.ok("object/list", map[string]any{"repo": "dirs", "delimiter": "/"})); !slices.Equal(got, []string{"pub/"}) {
		t.Fatalf("the lease's root: %v", got)
	}
	for _, prefix := range []string{"priv/", "pubx/", "", "p", "top"} {
		page := lc.ok("object/list", map[string]any{"repo": "dirs", "prefix": prefix})
		for _, k := range names(page) {
			if !bytes.HasPrefix([]byte(k), []byte("pub/")) {
				t.Fatalf("the lease listed %q under prefix %q", k, prefix)
			}
		}
	}
	for key, want := range map[string][3]bool{
		"pub/a.txt": {true, false, false}, "pub/b": {false, true, false},
		"priv": {false, false, false}, "priv/x.txt": {false, false, false}, "pubx": {false, false, false},
		"pubx/secret.txt": {false, false, false}, "top.txt": {false, false, false},
	} {
		if o, d, m := look(lc, key); [3]bool{o, d, m} != want {
			t.Errorf("lease lookup %q: %v %v %v, want %v", key, o, d, m, want)
		}
	}
	// Another repository or branch does not exist for it.
	lc.fails("object/list", map[string]any{"repo": "other"}, 404, "NotFound")
	lc.fails("object/lookup", map[string]any{"repo": "dirs", "branch": "dev", "key": "pub/a.txt"}, 404, "NotFound")
	// Without list, a lease cannot list (visible but refused), yet looks up what it may read.
	rc, _ := leaseClient(t, c, map[string]any{"repo": "dirs", "role": "reader", "branch": "main", "paths": []string{"pub/**"}, "actions": []string{"read"}})
	rc.fails("object/list", map[string]any{"repo": "dirs", "prefix": "pub/"}, 403, "AccessDenied")
	if o, _, _ := look(rc, "pub/a.txt"); !o {
		t.Fatal("a read lease cannot look up a file it may read")
	}
	if _, d, _ := look(rc, "pub/b"); d {
		t.Fatal("a lease without list learnt that a directory holds keys")
	}
}
