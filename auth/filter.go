package auth

import (
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/lease"
)

// Filter restricts a branch listing to the keys on which the request's
// lease grants a: only the key ranges of its globs are scanned, and only
// matching keys are listed or make a common prefix appear. The owner
// lists everything (nil).
func (p *Principal) Filter(a lease.Action) *branch.Filter {
	l, now := p.Lease, p.now
	if l == nil {
		return nil
	}
	f := &branch.Filter{Match: func(key string) bool { return l.Allows(a, key, now) }}
	for _, r := range l.Ranges(a, now) {
		f.Ranges = append(f.Ranges, branch.KeyRange{Start: r.Start, End: r.End})
	}
	return f
}

// Writer is who writes, for the commit that will fold the write (zero for
// the owner).
func (p *Principal) Writer() branch.Writer {
	if p.Lease == nil {
		return branch.Writer{}
	}
	return branch.Writer{Lease: p.Lease.ID, Run: p.Lease.Run}
}

// Visible reports whether the request's lease grants one of acts on key,
// for listings and lookups that leave out what the lease cannot see
// (they refuse nothing, so nothing is recorded). The owner sees
// everything.
func (p *Principal) Visible(key string, acts ...lease.Action) bool {
	if p.Lease == nil {
		return true
	}
	for _, a := range acts {
		if p.Lease.Allows(a, key, p.now) {
			return true
		}
	}
	return false
}

// Grants reports whether the request's lease grants a on some path (the
// owner: always).
func (p *Principal) Grants(a lease.Action) bool {
	return p.Lease == nil || p.Lease.AllowsAnywhere(a, p.now)
}
