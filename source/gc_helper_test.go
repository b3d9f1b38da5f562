package source_test

import (
	"time"

	"github.com/agentnas/nas/branch"
)

// branchGCNow collects with a short retention, as if long after.
func branchGCNow() branch.GCOptions {
	return branch.GCOptions{Retention: time.Nanosecond, Now: func() time.Time { return time.Now().Add(time.Hour) }}
}
