package s3api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/source"
)

// The S3 edge's answers to the errors of attached sources.
func TestToS3Sources(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("fetch data/x (ETag \"e\") from http://10.0.0.9:9000: %w", err)
	}
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{wrap(source.ErrChanged), http.StatusConflict, "RemoteObjectChanged"},
		{wrap(source.ErrEscape), http.StatusConflict, "RemoteObjectChanged"},
		{wrap(source.ErrRemoved), http.StatusConflict, "RemoteSourceRemoved"},
		{wrap(source.ErrThrottled), http.StatusServiceUnavailable, "SlowDown"},
		{wrap(source.ErrUnavailable), http.StatusServiceUnavailable, "ServiceUnavailable"},
		{wrap(source.ErrDenied), http.StatusServiceUnavailable, "ServiceUnavailable"},
		{wrap(source.ErrCorrupt), http.StatusServiceUnavailable, "ServiceUnavailable"},
		{manifest.ErrLazy, http.StatusNotImplemented, "NotImplemented"},
		{context.Canceled, 499, "RequestCanceled"},
	} {
		e := toS3(c.err)
		if e.Status != c.status || e.Code != c.code {
			t.Errorf("toS3(%v) = %d %s, want %d %s", c.err, e.Status, e.Code, c.status, c.code)
		}
		if strings.Contains(e.Message, "10.0.0.9") {
			t.Errorf("toS3(%v) shows the remote's address: %q", c.err, e.Message)
		}
	}
}
