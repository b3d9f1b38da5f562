package source

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/glob"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/manifest"
)

// Write-back. A push writes chosen changes of a branch back to an S3
// source: what the branch's committed state holds under the attachment's
// prefix that the attachment's own branch does not. Each write is
// conditional on the version the attachment pinned (If-Match its ETag,
// or If-None-Match: * for a key the remote did not have), so a remote
// that changed meanwhile is a conflict, listed, never overwritten. What
// was written is then pinned again on the attachment's branch (one
// commit), so the next refresh sees no drift and the next push starts
// from there. Pushes are never automatic: the owner asks for one, or
// approves a run's request for one at a gate.
//
// A push plans first (the diff, filtered) and writes after; the plan's
// digest binds an approval or a record to exactly what is written
// (PushOptions.Expect).

// ErrWriteConflict is a remote object that is no longer the version a
// write back was conditional on.
var ErrWriteConflict = errors.New("the remote object is not the pinned version")

// ErrPlanChanged is a push whose plan is no longer the one expected (the
// branch or the attachment moved since it was approved or recorded).
var ErrPlanChanged = fmt.Errorf("the push's plan changed since it was made: %w", ErrConflict)

// maxPushChanges bounds the changes one push plans (narrow it by paths).
const maxPushChanges = 100_000

// PushOptions says what a push writes.
type PushOptions struct {
	From   string   // the branch whose changes are written (not the attachment's own)
	Paths  []string // globs of repository keys (none: every change)
	DryRun bool     // list what would be written, write nothing
	// Principal is who pushes: the re-pin commit is theirs, and recorded
	// (Options.OnCommit) before the branch moves, as an attach's are.
	Principal string
	// Allow, when set, is asked for every planned change (deleted: the
	// key is removed); an error refuses the push, writing nothing.
	Allow func(key string, deleted bool) error
	// Expect, when set, is the digest the plan must have (PushReport's
	// Digest of an earlier dry run); ErrPlanChanged otherwise.
	Expect string
	// Before, when set, is given the plan (as a dry run would report it)
	// after planning and before the first write; an error writes nothing
	// (the flight recorder's "record first, then act").
	Before func(plan *PushReport) error
	// Own limits the plan to what From changed since it forked from the
	// attachment's branch, as a merge would carry it (a run's request):
	// what the attachment's branch got meanwhile is not undone. A key
	// both changed is ErrConflict.
	Own bool
}

// PushAction is what a push did, or would do, with one key.
type PushAction struct {
	Key    string `json:"key"`
	Op     string `json:"op"`     // "put" or "delete"
	Kind   string `json:"kind"`   // the change: "A" added, "M" modified, "D" deleted
	Result string `json:"result"` // "written", "would write", "conflict", "skipped", "failed"
	Reason string `json:"reason,omitempty"`
	ETag   string `json:"etag,omitempty"` // the remote's new ETag of a written put
}

// PushReport is the outcome of a push.
type PushReport struct {
	Source    string       `json:"source"`
	From      string       `json:"from"`
	DryRun    bool         `json:"dry_run,omitempty"`
	Actions   []PushAction `json:"actions"`
	Written   int          `json:"written"`
	Conflicts int          `json:"conflicts"`
	Commit    string       `json:"commit,omitempty"` // the re-pin on the attachment's branch
	// Digest binds the plan: the attachment, the branch pushed from, and
	// each change's key, kind, pinned and new versions.
	Digest string `json:"digest"`
}

// Push writes the changes of o.From back to attachment id's S3 source.
func (r *Registry) Push(ctx context.Context, id string, o PushOptions) (*PushReport, error) {
	rec, err := r.get(ctx, id)
	if err != nil {
		return nil, err
	}
	if o.From == "" || o.From == rec.Branch {
		return nil, fmt.Errorf("push from another branch than the attachment's own (%s): its changes against it are what is written: %w", rec.Branch, ErrInvalid)
	}
	src, err := r.Source(ctx, id)
	if err != nil {
		return nil, err
	}
	s3src, ok := src.(*S3)
	if !ok {
		return nil, fmt.Errorf("source %s is %s: only an S3 source takes writes back: %w", id, rec.URL, ErrInvalid)
	}
	changes, err := r.pushPlan(ctx, rec, o)
	if err != nil {
		return nil, err
	}
	rep := &PushReport{Source: id, From: o.From, DryRun: o.DryRun, Actions: []PushAction{}, Digest: pushDigest(rec, o.From, changes)}
	if o.Expect != "" && o.Expect != rep.Digest {
		return nil, ErrPlanChanged
	}
	for _, c := range changes {
		a, _ := r.pushOne(ctx, rec, s3src, c, true)
		rep.Actions = append(rep.Actions, a)
	}
	if o.DryRun {
		return rep, nil
	}
	if o.Before != nil {
		plan := *rep
		plan.DryRun, plan.Actions = true, slices.Clone(rep.Actions)
		if err := o.Before(&plan); err != nil {
			return nil, err
		}
	}
	var repin []branch.ImportEntry
	for i, c := range changes {
		if rep.Actions[i].Result != "would write" {
			continue
		}
		a, e := r.pushOne(ctx, rec, s3src, c, false)
		rep.Actions[i] = a
		switch a.Result {
		case "written":
			rep.Written++
			repin = append(repin, e)
		case "conflict":
			rep.Conflicts++
		}
	}
	if len(repin) > 0 {
		msg := fmt.Sprintf("push %s: %d written back from %s", id, len(repin), o.From)
		imp := branch.ImportOptions{AllowProtected: true, CommitOptions: branch.CommitOptions{Message: msg, Principal: o.Principal,
			Extra: []manifest.Pair{{Name: "source", Value: id}}}}
		if r.o.OnCommit != nil {
			imp.Intent = func(cid manifest.CommitID) error {
				return r.o.OnCommit(ctx, rec.Repo, rec.Branch, cid, msg, o.Principal)
			}
		}
		commit, err := r.b.ImportWith(ctx, rec.Repo, rec.Branch, entriesOf(repin), imp)
		if err != nil {
			return rep, fmt.Errorf("written back, but pinning what was written failed (a refresh pins it): %w", err)
		}
		rep.Commit = commit.String()
	}
	return rep, nil
}

// pushPlan is what a push would write: the changes of o.From against the
// attachment's branch under its prefix that o.Paths match, each allowed
// by o.Allow.
func (r *Registry) pushPlan(ctx context.Context, rec *record, o PushOptions) ([]branch.Change, error) {
	var changes []branch.Change
	match := func(key string) bool { return strings.HasPrefix(key, rec.Prefix) && matchAny(o.Paths, key) }
	take := func(c branch.Change) error {
		if len(changes) == maxPushChanges {
			return fmt.Errorf("a push writes at most %d changes (narrow it with paths): %w", maxPushChanges, ErrInvalid)
		}
		if o.Allow != nil {
			if err := o.Allow(c.Key, c.New == nil); err != nil {
				return err
			}
		}
		changes = append(changes, c)
		return nil
	}
	if o.Own {
		return changes, r.ownChanges(ctx, rec, o.From, match, take)
	}
	f := &branch.Filter{Ranges: []branch.KeyRange{{Start: rec.Prefix, End: string(kv.PrefixEnd([]byte(rec.Prefix)))}}, Match: match}
	err := r.b.Diff(ctx, rec.Repo, rec.Branch, o.From, "", f, take)
	return changes, err
}

// ownChanges streams what merging from into the attachment's branch
// would change there under match: from's own changes since they forked.
func (r *Registry) ownChanges(ctx context.Context, rec *record, from string, match func(string) bool, fn func(branch.Change) error) error {
	mo := branch.MergeOptions{DryRun: true, AllowProtected: true}
	res, err := r.b.Merge(ctx, rec.Repo, from, rec.Branch, mo)
	if errors.Is(err, branch.ErrMergeConflict) && res != nil {
		for _, c := range res.Conflicts {
			if match(c.Key) && !sameBytes(c.Ours, c.Theirs) {
				return fmt.Errorf("%s and %s both changed %s (refresh or merge first): %w", from, rec.Branch, c.Key, ErrConflict)
			}
		}
		// Conflicts elsewhere do not concern the push, nor both sides
		// holding the same bytes (what an earlier push wrote and re-pinned):
		// take the target's side there to see the changes to push.
		mo.Ours = []string{"**"}
		res, err = r.b.Merge(ctx, rec.Repo, from, rec.Branch, mo)
	}
	if err != nil {
		return err
	}
	for _, c := range res.Changes {
		if match(c.Key) {
			if err := fn(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameBytes reports whether a and b hold the same bytes by what their
// entries say (both deleted, or equal ETag and size).
func sameBytes(a, b *manifest.Entry) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ETag == b.ETag && a.Size == b.Size
}

// pushDigest hashes what a plan writes, length-prefixed field by field.
func pushDigest(rec *record, from string, changes []branch.Change) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("agentnas push digest v1")
	field(rec.Repo)
	field(rec.ID)
	field(rec.Branch)
	field(from)
	for _, c := range changes {
		field(string(c.Kind))
		field(c.Key)
		old, now := "", ""
		if c.Old != nil {
			old = c.Old.ETag
			if c.Old.Remote != nil {
				old += "\x00" + c.Old.Remote.ETag + "\x00" + c.Old.Remote.VersionID
			}
		}
		if c.New != nil {
			now = c.New.ETag + "\x00" + strconv.FormatInt(c.New.Size, 10) + "\x00" + c.New.ContentType
		}
		field(old)
		field(now)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// matchAny reports whether key matches one of globs (any key when none).
func matchAny(globs []string, key string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if glob.Match(glob.Clean(g), key) {
			return true
		}
	}
	return false
}

// entriesOf is es as an import's sequence.
func entriesOf(es []branch.ImportEntry) func(func(branch.ImportEntry, error) bool) {
	return func(yield func(branch.ImportEntry, error) bool) {
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// pushOne writes back one change (Old: the attachment's entry, New: the
// pushed branch's), returning what it did and, when written, the entry
// that pins the remote's new version.
func (r *Registry) pushOne(ctx context.Context, rec *record, s *S3, c branch.Change, dry bool) (PushAction, branch.ImportEntry) {
	rel := strings.TrimPrefix(c.Key, rec.Prefix)
	a := PushAction{Key: c.Key, Op: "put", Kind: string(c.Kind)}
	if c.New == nil {
		a.Op = "delete"
	}
	pinned := c.Old != nil && c.Old.Lazy() && c.Old.Remote.Source == rec.ID
	switch {
	case c.Old != nil && !pinned:
		a.Result, a.Reason = "skipped", "the attachment's branch holds a local object there, not the source's: nothing pins the remote version"
	case c.New != nil && c.New.Lazy():
		a.Result, a.Reason = "skipped", "the branch holds another source's object or another pin there, not local bytes"
	case c.New != nil && c.New.Retention == manifest.RetentionSensitive:
		a.Result, a.Reason = "skipped", "sensitive: its bytes never leave the gateway"
	case c.New != nil && label.Of(c.New.Label).Sensitivity == label.Secret:
		a.Result, a.Reason = "skipped", "labelled secret (the secret scanner or a rule): not written outside the gateway"
	case dry:
		a.Result = "would write"
	default:
		return r.write(ctx, rec, s, c, rel, pinned, a)
	}
	return a, branch.ImportEntry{}
}

// write does a put or delete of pushOne.
func (r *Registry) write(ctx context.Context, rec *record, s *S3, c branch.Change, rel string, pinned bool, a PushAction) (PushAction, branch.ImportEntry) {
	var ifMatch string
	if pinned {
		ifMatch = c.Old.Remote.ETag
	}
	fail := func(err error) (PushAction, branch.ImportEntry) {
		a.Result, a.Reason = "failed", err.Error()
		if errors.Is(err, ErrWriteConflict) {
			a.Result = "conflict"
		}
		return a, branch.ImportEntry{}
	}
	if c.New == nil {
		if err := s.Delete(ctx, rel, ifMatch); err != nil {
			return fail(err)
		}
		a.Result = "written"
		return a, branch.ImportEntry{Key: c.Key, Delete: true}
	}
	o, err := r.putBack(ctx, s, rel, c.New, ifMatch)
	if err != nil {
		return fail(err)
	}
	a.Result, a.ETag = "written", o.ETag
	return a, branch.ImportEntry{Key: c.Key, Entry: lazyEntry(rec.ID, o)}
}

// putBack writes entry e's bytes to rel at the remote, spooled through a
// temporary file (the SDK signs a seekable body).
func (r *Registry) putBack(ctx context.Context, s *S3, rel string, e *manifest.Entry, ifMatch string) (Object, error) {
	content, err := r.b.Manifest().Content(ctx, e)
	if err != nil {
		return Object{}, err
	}
	f, err := os.CreateTemp("", "nas-push-*")
	if err != nil {
		return Object{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := r.b.ReadContent(ctx, f, content, 0, e.Size); err != nil {
		return Object{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Object{}, err
	}
	return s.Put(ctx, rel, f, e, ifMatch)
}

// Put writes body (e's bytes, with its content type and user metadata)
// to key: If-Match ifMatch, or If-None-Match: * when ifMatch is "".
// ErrWriteConflict when the remote's object is not that version.
func (s *S3) Put(ctx context.Context, key string, body io.ReadSeeker, e *manifest.Entry, ifMatch string) (Object, error) {
	in := &s3.PutObjectInput{Bucket: &s.c.Bucket, Key: aws.String(s.c.Prefix + key), Body: body, ContentLength: aws.Int64(e.Size),
		Metadata: map[string]string{}}
	if e.ContentType != "" {
		in.ContentType = aws.String(e.ContentType)
	}
	for _, p := range foreignMeta(e.Meta) {
		in.Metadata[p.Name] = p.Value
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(`"` + ifMatch + `"`)
	} else {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := s.cl.PutObject(ctx, in)
	if err != nil {
		return Object{}, s.classifyWrite(ctx, err, key)
	}
	o := Object{Key: key, Size: e.Size, ETag: unquote(aws.ToString(out.ETag)), ModTime: time.Now().UTC(), ContentType: e.ContentType, Meta: foreignMeta(e.Meta)}
	if s.c.Versioned {
		o.VersionID = aws.ToString(out.VersionId)
	}
	return o, nil
}

// Delete deletes key If-Match ifMatch. A remote that ignores the
// condition on DELETE is asked first (a HEAD), which leaves a window
// between the two in which a new version would be deleted.
func (s *S3) Delete(ctx context.Context, key, ifMatch string) error {
	st, err := s.Stat(ctx, key)
	if errors.Is(err, ErrChanged) {
		return fmt.Errorf("remote object %s: already gone", key) // nothing to delete: reported, not a conflict
	}
	if err != nil {
		return err
	}
	if st.ETag != ifMatch {
		return fmt.Errorf("remote object %s: now %q, pinned %q: %w", key, st.ETag, ifMatch, ErrWriteConflict)
	}
	_, err = s.cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.c.Bucket, Key: aws.String(s.c.Prefix + key), IfMatch: aws.String(`"` + ifMatch + `"`)})
	return s.classifyWrite(ctx, err, key)
}

// classifyWrite maps an SDK error of a write back: a failed condition
// (or a key that exists, for If-None-Match) is a conflict.
func (s *S3) classifyWrite(ctx context.Context, err error, key string) error {
	if err == nil {
		return nil
	}
	if status, code := remoteStatus(err); status == 412 || code == "PreconditionFailed" || status == 409 || code == "ConditionalRequestConflict" {
		return fmt.Errorf("remote object %s: %s: %w", key, statusText(status, code), ErrWriteConflict)
	}
	return s.classify(ctx, err, key)
}
