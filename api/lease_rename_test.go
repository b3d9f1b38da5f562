package api_test

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// TestLeaseRenameAndRemaining: a lease renaming a directory into a name
// outside its view is refused and moves nothing (it used to answer
// success with every key skipped), keys it cannot see under a directory
// stay where they are, and lease/get names the remaining budgets as the
// budgets are named.
func TestLeaseRenameAndRemaining(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "files", "protected": false})
	put := func(key, body string) {
		c.ok("object/compose", map[string]any{"repo": "files", "key": key, "segments": []map[string]any{{"data": b64(body)}}})
	}
	put("work/a", "a")
	put("work/b", "b")
	put("work/hidden.bin", "h")
	putRole(c, map[string]any{"repo": "files", "role": "fs"})
	lr := c.ok("lease/create", map[string]any{"repo": "files", "role": "fs", "branch": "main", "paths": []string{"work/*.txt", "work/a", "work/b", "done/**"},
		"actions": []string{"list", "read", "write", "delete"}, "budgets": map[string]any{"bytes_read": 100}})["lease"].(map[string]any)
	lc := &client{t: t, srv: c.srv, creds: aws.Credentials{AccessKeyID: lr["access_key_id"].(string), SecretAccessKey: lr["secret_access_key"].(string), SessionToken: lr["session_token"].(string)}}
	lc.fails("object/rename", map[string]any{"repo": "files", "from": "work/", "to": "elsewhere/", "prefix": true}, 404, "NotFound")
	for _, k := range []string{"work/a", "work/b", "work/hidden.bin"} {
		c.ok("object/stat", map[string]any{"repo": "files", "key": k})
	}
	c.fails("object/stat", map[string]any{"repo": "files", "key": "elsewhere/a"}, 404, "NotFound")
	// Into its view, the visible keys move and the hidden one stays.
	r := lc.ok("object/rename", map[string]any{"repo": "files", "from": "work/", "to": "done/", "prefix": true})
	if r["renamed"].(float64) != 2 {
		t.Fatalf("rename into the view: %v", r)
	}
	c.ok("object/stat", map[string]any{"repo": "files", "key": "work/hidden.bin"})
	c.fails("object/stat", map[string]any{"repo": "files", "key": "done/hidden.bin"}, 404, "NotFound")
	rem := lc.ok("lease/get", map[string]any{})["remaining"].(map[string]any)
	if rem["bytes_read"] != float64(100) || rem["bytes_written"] != float64(-1) || rem["requests"] != float64(-1) {
		t.Fatalf("remaining: %v", rem)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
