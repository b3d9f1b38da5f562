package source

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
)

// prefetch lists src in a goroutine, up to n objects ahead of the
// caller, so listing the remote and importing overlap. next returns the
// objects in order, then ok false (or the listing's error); stop ends the
// listing early and waits for it.
func prefetch(ctx context.Context, src Source, n int) (next func() (Object, error, bool), stop func()) {
	type item struct {
		o   Object
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan item, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch) // the producer closes
		err := src.List(ctx, "", func(o Object) error {
			select {
			case ch <- item{o: o}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && ctx.Err() == nil {
			ch <- item{err: err}
		}
	}()
	next = func() (Object, error, bool) {
		it, ok := <-ch
		if !ok {
			if err := ctx.Err(); err != nil {
				return Object{}, err, false
			}
			return Object{}, nil, false
		}
		return it.o, it.err, it.err == nil
	}
	stop = func() {
		cancel()
		<-done
	}
	return next, stop
}

// lazyEntry returns the entry standing for o of attachment id: external
// content (an import point's default label), whoever attached it.
func lazyEntry(id string, o Object) *manifest.Entry {
	e := &manifest.Entry{Size: o.Size, ETag: o.ETag, ContentType: cmp.Or(o.ContentType, defaultContentType), Meta: foreignMeta(o.Meta),
		Remote: &manifest.Remote{Source: id, Key: o.Key, ETag: o.ETag, VersionID: o.VersionID}, Label: &label.Label{Origin: label.External}}
	if !o.ModTime.IsZero() {
		e.ModTime = o.ModTime.UnixNano()
	}
	return e
}

// pinnedBy reports whether e is attachment id's entry for o, still pinning
// the same version.
func pinnedBy(e *manifest.Entry, id string, o Object) bool {
	return e.Remote != nil && e.Remote.Source == id && e.Remote.Key == o.Key && e.Remote.ETag == o.ETag &&
		e.Remote.VersionID == o.VersionID && e.Size == o.Size && e.Lazy()
}

// ownedBy reports whether e is a lazy entry of attachment id (not a local
// object written over it, not another source's).
func ownedBy(e *manifest.Entry, id string) bool {
	return e.Lazy() && e.Remote.Source == id
}

// syncer merges a source's listing with the branch's entries under the
// attachment's prefix, both in key order, into the changes that make the
// branch mirror the source: new remote objects are added, re-pinned ones
// replaced, vanished ones deleted. Objects written on the branch over the
// prefix (not lazy entries of this source) are left alone.
type syncer struct {
	r      *Registry
	rec    *record
	src    Source // asked for metadata when rec.WithMetadata
	remote func() (Object, error, bool)
	rem    *Object // next remote object, nil when not fetched
	remEnd bool

	local    []branch.Object // current page of the branch's listing
	localAt  int
	localEnd bool
	after    string // last key of the branch's listing read

	st Info // counters
}

func (s *syncer) peekRemote() (*Object, error) {
	if s.rem == nil && !s.remEnd {
		o, err, ok := s.remote()
		if err != nil {
			return nil, err
		}
		if !ok {
			s.remEnd = true
			return nil, nil
		}
		s.st.Listed++
		s.rem = &o
	}
	return s.rem, nil
}

func (s *syncer) peekLocal(ctx context.Context) (*branch.Object, error) {
	for s.localAt >= len(s.local) && !s.localEnd {
		res, err := s.r.b.List(ctx, s.rec.Repo, s.rec.Branch, branch.ListOptions{Prefix: s.rec.Prefix, After: s.after, MaxKeys: 1000})
		if err != nil {
			return nil, err
		}
		s.local, s.localAt = res.Objects, 0
		if len(res.Objects) > 0 {
			s.after = res.Objects[len(res.Objects)-1].Key
		}
		s.localEnd = !res.Truncated
	}
	if s.localAt < len(s.local) {
		return &s.local[s.localAt], nil
	}
	return nil, nil
}

// next returns the next change; ok is false when there is none left.
func (s *syncer) next(ctx context.Context) (ie branch.ImportEntry, ok bool, err error) {
	for {
		rem, err := s.peekRemote()
		if err != nil {
			return ie, false, err
		}
		loc, err := s.peekLocal(ctx)
		if err != nil {
			return ie, false, err
		}
		if rem == nil && loc == nil {
			return ie, false, nil
		}
		var locKey string
		if loc != nil {
			locKey = strings.TrimPrefix(loc.Key, s.rec.Prefix)
		}
		switch {
		case loc == nil || rem != nil && rem.Key < locKey:
			o := *rem
			s.rem = nil
			key := s.rec.Prefix + o.Key
			if branch.ValidKey(key) != nil || o.ETag == "" {
				s.st.Skipped++
				continue
			}
			s.st.Added++
			return s.pin(ctx, key, o)
		case rem == nil || locKey < rem.Key:
			s.localAt++
			if ownedBy(loc.Entry, s.rec.ID) {
				s.st.Removed++
				return branch.ImportEntry{Key: loc.Key, Delete: true}, true, nil
			}
			continue // a local object, or another source's
		default:
			o := *rem
			s.rem = nil
			s.localAt++
			switch {
			case pinnedBy(loc.Entry, s.rec.ID, o):
				continue
			case ownedBy(loc.Entry, s.rec.ID):
				s.st.Changed++
				return s.pin(ctx, loc.Key, o)
			}
			s.st.Kept++
		}
	}
}

// pin is the change that makes key stand for the listed object o. With
// metadata it asks the remote (a HEAD) and pins what that answers, which
// is the object as it is now: one that changed since the listing is
// pinned as it now is, one that vanished as listed (the next refresh
// removes it).
func (s *syncer) pin(ctx context.Context, key string, o Object) (branch.ImportEntry, bool, error) {
	if s.rec.WithMetadata {
		st, err := s.src.Stat(ctx, o.Key)
		switch {
		case err == nil && st.ETag != "":
			o = st
		case err != nil && !errors.Is(err, ErrChanged):
			return branch.ImportEntry{}, false, err
		}
	}
	return branch.ImportEntry{Key: key, Entry: lazyEntry(s.rec.ID, o)}, true, nil
}

// sync lists the source of attachment id and commits the changes, at most
// CommitEvery per commit, updating the record's progress after each.
func (r *Registry) sync(ctx context.Context, id, principal string) error {
	rec, err := r.get(ctx, id)
	if err != nil {
		return err
	}
	src, err := r.Source(ctx, id)
	if err != nil {
		return err
	}
	br, err := r.b.GetBranch(ctx, rec.Repo, rec.Branch)
	if err != nil {
		return err
	}
	next, stop := prefetch(ctx, src, 4096)
	defer stop()
	s := &syncer{r: r, rec: rec, src: src, remote: next}
	verb := "refresh"
	if rec.State == "importing" {
		verb = "attach"
	}
	progress := func(commit string, commits int) error {
		return r.update(ctx, id, func(x *record) {
			x.Listed, x.Added, x.Changed, x.Removed, x.Kept, x.Skipped = s.st.Listed, s.st.Added, s.st.Changed, s.st.Removed, s.st.Kept, s.st.Skipped
			x.Base, x.Commit, x.Commits = br.Head.String(), commit, commits
		})
	}
	if err := progress("", 0); err != nil {
		return err
	}
	commits, last := 0, ""
	for {
		first, ok, err := s.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return progress(last, commits)
		}
		n := 1
		var ierr error
		entries := func(yield func(branch.ImportEntry, error) bool) {
			if !yield(first, nil) {
				return
			}
			for n < r.o.CommitEvery {
				ie, ok, err := s.next(ctx)
				if err != nil {
					ierr = err
					yield(ie, err)
					return
				}
				if !ok {
					return
				}
				n++
				if !yield(ie, nil) {
					return
				}
			}
		}
		msg := fmt.Sprintf("%s source %s (%s) at %q", verb, id, rec.URL, rec.Prefix)
		if commits > 0 {
			msg += fmt.Sprintf(", page %d", commits+1)
		}
		o := branch.ImportOptions{AllowProtected: true, CommitOptions: branch.CommitOptions{Message: msg, Principal: principal,
			Extra: []manifest.Pair{{Name: "source", Value: id}}}}
		if r.o.OnCommit != nil {
			o.Intent = func(cid manifest.CommitID) error {
				return r.o.OnCommit(ctx, rec.Repo, rec.Branch, cid, msg, principal)
			}
		}
		cid, err := r.b.ImportWith(ctx, rec.Repo, rec.Branch, entries, o)
		if err != nil {
			if ierr != nil {
				return ierr
			}
			return err
		}
		commits, last = commits+1, cid.String()
		if err := progress(last, commits); err != nil {
			return err
		}
	}
}
