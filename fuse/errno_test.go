package fuse

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/agentnas/nas/client"
)

// TestErrno is the mount's translation table: the specification's errno
// for every answer the gateway gives, EIO for what it does not know.
func TestErrno(t *testing.T) {
	gw := func(status int, code, reason string) error {
		return fmt.Errorf("read x: %w", &client.Error{Status: status, Code: code, Reason: reason})
	}
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{gw(404, "NoSuchKey", ""), syscall.ENOENT},
		{gw(404, "NoSuchBucket", ""), syscall.ENOENT},
		{gw(404, "NoSuchVersion", ""), syscall.ENOENT},
		{gw(404, "NotFound", ""), syscall.ENOENT},
		{gw(403, "AccessDenied", ""), syscall.EACCES},
		{gw(403, "QuotaExceeded", ""), syscall.EDQUOT},
		{gw(507, "StorageFull", ""), syscall.ENOSPC},
		{gw(400, "ExpiredToken", ""), syscall.ESTALE},
		{gw(403, "InvalidAccessKeyId", ""), syscall.ESTALE},
		{gw(403, "Unauthenticated", "expired"), syscall.ESTALE},
		{gw(403, "Unauthenticated", "revoked"), syscall.ESTALE},
		{gw(403, "Unauthenticated", "signature"), syscall.EACCES},
		{gw(403, "SignatureDoesNotMatch", ""), syscall.EACCES},
		{gw(412, "PreconditionFailed", ""), syscall.EEXIST},
		{gw(400, "EntityTooLarge", ""), syscall.EFBIG},
		{gw(400, "KeyTooLongError", ""), syscall.ENAMETOOLONG},
		{gw(400, "InvalidArgument", ""), syscall.EINVAL},
		{gw(501, "NotImplemented", ""), syscall.EOPNOTSUPP},
		{gw(503, "ServiceUnavailable", ""), syscall.EIO},
		{gw(503, "SlowDown", ""), syscall.EIO},
		{gw(500, "InternalError", ""), syscall.EIO},
		{gw(409, "RemoteObjectChanged", ""), syscall.EIO},
		{gw(0, "Unreachable", ""), syscall.EIO},
		{&client.Error{Code: "Unreachable", Message: "refused"}, syscall.EIO},
		{fmt.Errorf("x: %w", &client.Error{Code: "Unreachable"}), syscall.EIO},
		{errStale, syscall.ESTALE},
		{errReadOnly, syscall.EROFS},
		{context.Canceled, syscall.EINTR},
		{fs.ErrNotExist, syscall.ENOENT},
		{fmt.Errorf("wrapped: %w", syscall.ENOSPC), syscall.ENOSPC},
		{errors.New("anything else"), syscall.EIO},
	} {
		if got := errno(tc.err); got != tc.want {
			t.Errorf("errno(%v) = %v, want %v", tc.err, got, tc.want)
		}
		if got := errno(tc.err); got == syscall.ENOSYS {
			t.Errorf("errno(%v) is ENOSYS", tc.err)
		}
	}
	// A cancelled call whose transport error is ECONNREFUSED is still EIO,
	// not the transport's errno.
	ce := &client.Error{Code: "Unreachable"}
	if got := errno(fmt.Errorf("%w: %w", ce, syscall.ECONNREFUSED)); got != syscall.EIO {
		t.Errorf("unreachable with a transport errno: %v", got)
	}
}
