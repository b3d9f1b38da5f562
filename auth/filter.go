package auth

import (
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
)

// Filter restricts a branch listing to the keys on which l grants a: only
// the key ranges of its globs are scanned, and only matching keys are
// listed or make a common prefix appear. A nil lease (the owner) lists
// everything.
func Filter(l *lease.Lease, a lease.Action, now time.Time) *branch.Filter {
	if l == nil {
		return nil
	}
	f := &branch.Filter{Match: func(key string) bool { return l.Allows(a, key, now) }}
	for _, r := range l.Ranges(a, now) {
		f.Ranges = append(f.Ranges, branch.KeyRange{Start: r.Start, End: r.End})
	}
	return f
}
