package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/nastest"
)

// TestJSONErrors: with --json every failure is one JSON error document on
// standard error (and nothing else there), with the exit code saying
// which kind: the gateway's code for a failed call, UsageError (2) for a
// wrong command line.
func TestJSONErrors(t *testing.T) {
	srv := nastest.Start(t)
	t.Setenv("NAS_ENDPOINT", srv.Endpoint)
	t.Setenv("NAS_ACCESS_KEY", nastest.AccessKey)
	t.Setenv("NAS_SECRET_KEY", nastest.SecretKey)
	for _, tc := range []struct {
		args []string
		exit int
		code string
	}{
		{[]string{"branch", "delete", "nosuchrepo", "x", "--json"}, 1, apiv1.CodeNotFound},
		{[]string{"branch", "create", "onlyone", "--json"}, 2, codeUsage},
		{[]string{"commit", "--json"}, 2, codeUsage},
	} {
		exit, stderr := runCLIStderr(t, tc.args...)
		var doc apiv1.ErrorDocument
		dec := json.NewDecoder(strings.NewReader(stderr))
		if err := dec.Decode(&doc); err != nil || doc.Error == nil || dec.More() {
			t.Errorf("nas %s: stderr is not one error document: %v %q", strings.Join(tc.args, " "), err, stderr)
			continue
		}
		if exit != tc.exit || doc.Error.Code != tc.code || doc.Error.Message == "" {
			t.Errorf("nas %s: exit %d code %q message %q; want exit %d code %q", strings.Join(tc.args, " "),
				exit, doc.Error.Code, doc.Error.Message, tc.exit, tc.code)
		}
	}
}
