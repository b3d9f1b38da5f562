package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentnas/nas/client"
)

func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string // the text's start
		not  string // what the text must not hold
	}{
		{&client.Error{Status: 404, Code: "NoSuchKey", Message: "no secret/plan.md here"}, "NotFound: read x: no such path", "secret/plan.md"},
		{&client.Error{Status: 404, Code: "NotFound", Message: "no object"}, "NotFound: ", "no object"},
		{&client.Error{Status: 404, Code: "NoSuchBucket"}, "NotFound: ", ""},
		{&client.Error{Status: 403, Code: "AccessDenied", Message: "no write"}, "AccessDenied: read x: the lease does not allow", ""},
		{&client.Error{Status: 429, Code: "QuotaExceeded", Message: "read budget"}, "QuotaExceeded: read x: a budget", ""},
		{&client.Error{Status: 507, Code: "StorageFull", Message: "no room"}, "StorageFull: read x: the gateway's storage is full", ""},
		{&client.Error{Status: 403, Code: "ExpiredToken"}, "ExpiredToken: ", ""},
		{&client.Error{Status: 403, Code: "InvalidAccessKeyId"}, "ExpiredToken: ", ""},
		{&client.Error{Status: 401, Code: "Unauthenticated", Reason: "revoked"}, "ExpiredToken: ", ""},
		{&client.Error{Status: 401, Code: "Unauthenticated", Reason: "signature"}, "Unauthenticated: ", ""},
		{&client.Error{Status: 413, Code: "TooLarge", Message: "too big"}, "TooLarge: read x: too big", ""},
		{context.Canceled, "read x: context canceled", ""},
	} {
		err := refusal("read x", tc.err)
		if !strings.HasPrefix(err.Error(), tc.want) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("refusal(%v) = %q, want it to start %q without %q", tc.err, err, tc.want, tc.not)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("refusal(%v) does not wrap it", tc.err)
		}
	}
}
