package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
)

// What a lease may learn of a review: the lines of a proposal's diff and
// its conflicts name keys and their entries on both sides, and a request
// to forget names globs. A line is a lookup, so leaving one out refuses
// nothing and records nothing; a request to forget outside the view is a
// refusal, recorded.

// AdmitsAt reports whether p's lease may know key exists in repo as of
// each commit of at (a diff's sides): its view lets it list or read key,
// and no entry of key at those commits is above its sensitivity ceiling.
// A commit that does not hold key (zero, or without the key) admits it;
// the owner is admitted to everything.
func (a *Authority) AdmitsAt(ctx context.Context, p *Principal, repo, key string, at ...manifest.CommitID) (bool, error) {
	if p.Lease == nil {
		return true, nil
	}
	if !p.Visible(key, lease.List, lease.Read) {
		return false, nil
	}
	for _, id := range at {
		if id.IsZero() {
			continue
		}
		e, err := a.branches.GetAt(ctx, repo, id, key)
		if errors.Is(err, branch.ErrNoSuchKey) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("admitting %s as of %s: %w", key, id, err)
		}
		if !a.Admits(ctx, p, repo, key, e) {
			return false, nil
		}
	}
	return true, nil
}

// AuthorizeChange asks whether p may make act (write, or delete) on t.Key
// as a commit that replays other commits (a revert, a cherry-pick, a
// restore): Authorize, and for a lease no entry of the key at the commits
// of at above its sensitivity ceiling. Such an entry refuses the change,
// recorded and answered as ErrNotFound: for the lease the key does not
// exist, and a replay must not write or remove what it cannot know of.
func (a *Authority) AuthorizeChange(ctx context.Context, p *Principal, act lease.Action, t Target, at ...manifest.CommitID) error {
	if err := a.Authorize(ctx, p, act, t); err != nil {
		return err
	}
	ok, err := a.AdmitsAt(ctx, p, t.Repo, t.Key, at...)
	if err != nil || ok {
		return err
	}
	v := lease.Verdict{Decision: lease.NotFound, Rule: "an entry the change involves is above the lease's sensitivity ceiling"}
	return a.refuse(ctx, p, string(act), t, v, ErrNotFound)
}

// AuthorizeForgetRequest asks whether p's lease may ask to forget paths:
// only globs every key of which a rule of its view lets it read. Any
// other glob is refused (ErrDenied, recorded, naming the glob); the owner
// forgets with forget/run and is not asked.
func (a *Authority) AuthorizeForgetRequest(ctx context.Context, p *Principal, paths []string) error {
	l := p.Lease
	if l == nil {
		return nil
	}
	for _, g := range paths {
		if readsAll(l, g) {
			continue
		}
		v := lease.Verdict{Decision: lease.Denied,
			Rule: fmt.Sprintf("a lease asks to forget only paths its view lets it read, and %q is not among them", g)}
		return a.refuse(ctx, p, "forget/request", Target{Repo: l.Repo, Branch: l.Branch, Key: g}, v, ErrDenied)
	}
	return nil
}

// readsAll reports whether every key g matches is one a rule of l's view
// lets it read.
func readsAll(l *lease.Lease, g string) bool {
	for _, r := range l.View {
		if slices.Contains(r.Actions, lease.Read) && glob.Covers(glob.Clean(r.Path), glob.Clean(g)) {
			return true
		}
	}
	return false
}
