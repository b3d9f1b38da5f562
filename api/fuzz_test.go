package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/agentnas/nas/nastest"
)

// ops are the control API's operations (repo/export and repo/import
// stream, and are fuzzed by gitexport's own tests).
var ops = []string{
	"repo/create", "repo/get", "repo/list", "repo/delete",
	"branch/create", "branch/get", "branch/list", "branch/delete", "branch/protect", "branch/unprotect", "branch/limits",
	"commit/create", "commit/log", "diff/list", "changes/list", "admin/fsck",
	"lease/create", "lease/get", "lease/list", "lease/revoke", "share/grant", "share/list", "share/revoke",
	"role/put", "role/get", "role/list", "role/delete", "record/list", "record/explain", "record/verify",
	"object/stat", "object/list", "object/lookup", "object/reads", "object/compose", "object/rename", "object/put-batch",
	"merge/create", "propose/create", "gate/list", "gate/get", "gate/approve", "gate/deny", "gate/stats",
	"policy/get", "policy/set", "checkpoint/create", "checkpoint/list", "checkpoint/restore", "trash/list", "trash/restore",
	"source/add", "source/get", "source/list", "source/refresh", "source/remove",
	"files/read", "files/dereference", "files/verify",
	"check/add", "check/list", "check/remove", "check/require", "check/results", "check/rerun",
	"object/touched",
}

// FuzzControlAPI sends any body to any operation through the real
// handler, decoding included: every answer is a JSON document, an error
// is one of the error document's, and nothing is a 500.
func FuzzControlAPI(f *testing.F) {
	srv := nastest.Start(f)
	owner := aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}
	post(f, srv, owner, "repo/create", []byte(`{"repo":"fz"}`))
	post(f, srv, owner, "role/put", []byte(`{"name":"fz","repo":"fz","view":[{"path":"**","actions":["list","read","write"]}]}`))
	for i := range ops {
		f.Add(uint8(i), []byte(`{"repo":"fz","branch":"main","key":"a","name":"b","ranges":[{"offset":-1,"length":9223372036854775807}]}`))
	}
	f.Add(uint8(16), []byte(`{"repo":"fz","role":"fz","fork_from":"main","ttl":"-5h","budgets":{"bytes_read":-1}}`))
	f.Add(uint8(34), []byte(`{"repo":"fz","key":"c","segments":[{"key":"a","offset":9223372036854775800,"length":100}]}`))
	f.Add(uint8(10), []byte(`{"repo":"fz","name":"main","ttl":"2562047h","quota_bytes":-1}`))
	f.Add(uint8(0), []byte(`{"repo":"fz"}{"repo":"other"}`))
	f.Add(uint8(1), []byte(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, op uint8, body []byte) {
		name := ops[int(op)%len(ops)]
		if name == "repo/delete" || name == "branch/delete" || name == "role/delete" {
			return // keep the fixtures the other inputs use
		}
		status, out := post(t, srv, owner, name, body)
		if status >= 500 && status != http.StatusServiceUnavailable && status != http.StatusNotImplemented {
			t.Fatalf("%s %q: %d %s", name, body, status, out)
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%s %q: %d, not JSON: %s", name, body, status, out)
		}
		if status >= 400 {
			var e struct {
				Error *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(out, &e) != nil || e.Error == nil || e.Error.Code == "" {
				t.Fatalf("%s %q: %d without an error document: %s", name, body, status, out)
			}
		}
	})
}

// post signs body with creds and posts it to op.
func post(tb testing.TB, srv *nastest.Server, creds aws.Credentials, op string, body []byte) (int, []byte) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.Endpoint+"/_nas/v1/"+op, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(body)
	h := hex.EncodeToString(sum[:])
	req.Header.Set("x-amz-content-sha256", h)
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, h, "s3", "us-east-1", time.Now()); err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
