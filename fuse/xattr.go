package fuse

import (
	"context"
	"strings"
	"syscall"
)

// noXattrs gives a node no extended attributes: none to get or list, and
// none can be set (ENOTSUP, which cp -a and rsync -X pass over; EPERM for
// the gateway's own user.nas.*). Directories, links and the control
// files embed it; files answer their labels (fileNode).
type noXattrs struct{}

// Getxattr answers that there is no such attribute.
func (noXattrs) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENODATA
}

// Listxattr lists none.
func (noXattrs) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) { return 0, 0 }

// Setxattr refuses.
func (noXattrs) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return xattrRefusal(attr)
}

// Removexattr refuses.
func (noXattrs) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return xattrRefusal(attr)
}

// xattrRefusal is the refusal of a change to attr.
func xattrRefusal(attr string) syscall.Errno {
	if strings.HasPrefix(attr, "user.nas.") {
		return syscall.EPERM
	}
	return syscall.ENOTSUP
}
