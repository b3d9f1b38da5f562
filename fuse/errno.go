package fuse

import (
	"context"
	"errors"
	"io/fs"
	"syscall"

	"github.com/agentnas/nas/client"
)

// errStale marks an operation refused because the lease ended.
var errStale = errors.New("the lease has expired or was revoked")

// errReadOnly marks a write on a read-only mount.
var errReadOnly = errors.New("the mount is read-only")

// errno is the mount's one translation table: an error of the gateway
// client (or of the mount itself) to the errno a program sees. Unknown
// failures are EIO, never ENOSYS.
func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var ce *client.Error
	if !errors.As(err, &ce) {
		var en syscall.Errno
		switch {
		case errors.Is(err, errStale):
			return syscall.ESTALE
		case errors.Is(err, errReadOnly):
			return syscall.EROFS
		case errors.Is(err, context.Canceled):
			return syscall.EINTR
		case errors.As(err, &en):
			return en
		case errors.Is(err, fs.ErrNotExist):
			return syscall.ENOENT
		}
		return syscall.EIO
	}
	if deadLease(ce) {
		return syscall.ESTALE
	}
	if ce.Status == 0 && errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	switch ce.Code {
	case "NoSuchKey", "NoSuchBucket", "NoSuchVersion", "NoSuchUpload", "NotFound":
		return syscall.ENOENT
	case "AccessDenied", "InvalidToken", "SignatureDoesNotMatch", "Unauthenticated":
		return syscall.EACCES
	case "QuotaExceeded":
		return syscall.EDQUOT
	case "StorageFull":
		return syscall.ENOSPC
	case "PreconditionFailed", "AlreadyExists":
		return syscall.EEXIST
	case "EntityTooLarge":
		return syscall.EFBIG
	case "KeyTooLongError":
		return syscall.ENAMETOOLONG
	case "InvalidArgument", "InvalidRange", "InvalidObjectName":
		return syscall.EINVAL
	case "NotImplemented":
		return syscall.EOPNOTSUPP
	}
	return syscall.EIO
}

// deadLease reports whether the gateway refused the credentials because
// the lease behind them expired or was revoked.
func deadLease(ce *client.Error) bool {
	switch ce.Code {
	case "ExpiredToken", "InvalidAccessKeyId":
		return true
	case "Unauthenticated":
		return ce.Reason == "expired" || ce.Reason == "revoked"
	}
	return false
}

// errCode is the gateway's error code of err, "" if it has none.
func errCode(err error) string { return client.Code(err) }
