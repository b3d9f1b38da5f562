package auth

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// What the door writes to the flight recorder: every refusal (the first
// of a request as it happens, the rest as one summary at Finish, at most
// refusalsPerSecond records per lease and per second for
// unauthenticated requests, the excess counted in the next record), every
// use of a share grant, every read in the run's read manifest, and the
// events interfaces hand to Record with the principal's provenance.

// refusalsPerSecond bounds the refusal records of one lease (or of all
// unauthenticated requests together) per second, so a flood cannot bury
// the record.
const refusalsPerSecond = 20

// summaryKeys is how many refused keys a summary record names.
const summaryKeys = 8

// denial is a refusal waiting for the request's summary.
type denial struct {
	act string
	t   Target
	v   lease.Verdict
}

// Provenance fills an event's run, lease and principal from p (the
// owner's access key, or the lease's provenance), and its repository and
// branch from the lease when the event names none. An event that already
// names a lease (one about a lease: issued, revoked, a grant) keeps it.
func Provenance(e *record.Event, p *Principal) {
	if p == nil || e.Lease != "" {
		return
	}
	if p.Lease == nil {
		if e.Principal == "" {
			e.Principal = p.AccessKey
		}
		return
	}
	LeaseProvenance(e, p.Lease)
}

// LeaseProvenance fills an event's provenance from lease l.
func LeaseProvenance(e *record.Event, l *lease.Lease) {
	e.Run, e.Principal, e.OnBehalfOf, e.Lease, e.Purpose = l.Run, l.Principal, l.OnBehalfOf, l.ID, l.Purpose
	if e.Repo == "" {
		e.Repo, e.Branch = l.Repo, l.Branch
	}
}

// Record appends e with p's provenance, after flushing the run's read
// manifest so the event binds what the run had read. An error means the
// operation must not happen ("record first, then act").
func (a *Authority) Record(ctx context.Context, p *Principal, e record.Event) error {
	if a.rec == nil {
		return nil
	}
	Provenance(&e, p)
	e.Subject.Path = recorded(e.Subject.Path)
	if p != nil && p.Lease != nil && e.Lease == p.Lease.ID {
		e.ReadManifest = record.ManifestID(p.Lease.Run)
		if a.reads != nil {
			if err := a.reads.Flush(ctx, p.Lease.Run); err != nil {
				a.log.Warn("flushing read manifest", "run", p.Lease.Run, "err", err)
			}
		}
	}
	_, err := a.rec.Append(ctx, e)
	return err
}

// FlushReads writes the buffered read manifests of runs, so an event
// about to name them (a commit of their writes) binds what they read.
func (a *Authority) FlushReads(ctx context.Context, runs ...string) {
	if a.reads == nil {
		return
	}
	for _, run := range runs {
		if err := a.reads.Flush(ctx, run); err != nil {
			a.log.Warn("flushing read manifest", "run", run, "err", err)
		}
	}
}

// denied records a refusal: the request's first at once, the rest in the
// summary Finish writes.
func (a *Authority) denied(ctx context.Context, p *Principal, act string, t Target, v lease.Verdict) {
	if a.rec == nil {
		return
	}
	if p.refused {
		p.denials = append(p.denials, denial{act, t, v})
		return
	}
	p.refused = true
	e := record.Event{Kind: record.KindDenied, Repo: t.Repo, Branch: t.Branch, Subject: record.Subject{Path: recorded(t.Key), Commit: t.Commit},
		Decision: record.Decision{Effect: record.Effect(v.Decision.String()), Rule: v.Rule}, Details: map[string]string{"action": act}}
	a.appendLimited(ctx, p.Lease.ID, p, e)
}

// summarise writes the refusals after a request's first as one record.
func (a *Authority) summarise(ctx context.Context, p *Principal) {
	ds := p.denials
	p.denials = nil
	first := ds[0]
	keys := make([]string, 0, summaryKeys)
	for _, d := range ds[:min(len(ds), summaryKeys)] {
		keys = append(keys, strconv.Quote(d.t.Key))
	}
	e := record.Event{Kind: record.KindDenied, Repo: first.t.Repo, Branch: first.t.Branch,
		Decision: record.Decision{Effect: record.Effect(first.v.Decision.String()), Rule: first.v.Rule,
			Reason: fmt.Sprintf("%d more refusals in the same request", len(ds))},
		Details: map[string]string{"action": first.act, "count": strconv.Itoa(len(ds)), "keys": strings.Join(keys, " ")}}
	a.appendLimited(ctx, p.Lease.ID, p, e)
}

// authFailed records a request refused before it had a principal: who it
// claimed to be and why.
func (a *Authority) authFailed(ctx context.Context, r *http.Request, err error) {
	a.authFailedAs(ctx, r, claimedKey(r), err)
}

// authFailedAs is authFailed naming the principal claimed.
func (a *Authority) authFailedAs(ctx context.Context, r *http.Request, claimed string, err error) {
	if a.rec == nil {
		return
	}
	e := record.Event{Kind: record.KindDenied, Principal: claimed, Subject: record.Subject{Path: r.URL.EscapedPath()},
		Decision: record.Decision{Effect: record.EffectDeny, Rule: "authentication", Reason: FailureReason(err)},
		Details:  map[string]string{"method": r.Method, "remote": r.RemoteAddr}}
	a.appendLimited(ctx, "", nil, e)
}

// appendLimited appends e unless the limiter refuses key this second; a
// record after a refused stretch says how many were not written.
func (a *Authority) appendLimited(ctx context.Context, key string, p *Principal, e record.Event) {
	ok, dropped := a.limit.take(key, a.now().Unix())
	if !ok {
		return
	}
	if dropped > 0 {
		e.Details["not_recorded_before"] = strconv.Itoa(dropped)
	}
	Provenance(&e, p)
	if _, err := a.rec.Append(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("flight recorder: refusal not recorded", "err", err)
	}
}

// grantUsed records that a share grant allowed a request.
func (a *Authority) grantUsed(ctx context.Context, p *Principal, grant, key string) {
	if a.rec == nil {
		return
	}
	e := record.Event{Kind: record.KindShareUsed, Subject: record.Subject{Path: recorded(key)}, Details: map[string]string{"grant": grant}}
	Provenance(&e, p)
	if _, err := a.rec.Append(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("flight recorder: grant use not recorded", "err", err)
	}
}

// recordRead adds a lease's read to its run's read manifest: the path, the
// commit it was read at (the target's, else the branch head), the version,
// range and ETag (never content).
func (a *Authority) recordRead(ctx context.Context, p *Principal, t Target, e *manifest.Entry, off, n int64) {
	if a.reads == nil || e == nil {
		return
	}
	rd := record.Read{Path: recorded(t.Key), Commit: t.Commit, VersionID: e.VersionID, Offset: off, Length: n, ETag: e.ETag}
	if rd.Commit == "" {
		if b, err := a.branches.GetBranch(ctx, t.Repo, t.Branch); err == nil {
			rd.Commit = b.Head.String()
		}
	}
	if err := a.reads.Add(context.WithoutCancel(ctx), p.Lease.Run, rd); err != nil {
		a.log.Error("read manifest", "run", p.Lease.Run, "err", err)
	}
}

// recorded is a key as the recorder can hold it: keys are raw bytes, the
// record is UTF-8, so a key that is not has its invalid bytes replaced
// (a run of them by one U+FFFD); with the version ID beside it the read stays unambiguous.
func recorded(key string) string {
	if utf8.ValidString(key) {
		return key
	}
	return strings.ToValidUTF8(key, "\uFFFD")
}

// claimedKey returns the access key a request claims, or "anonymous".
func claimedKey(r *http.Request) string {
	if c := r.URL.Query().Get("X-Amz-Credential"); c != "" {
		ak, _, _ := strings.Cut(c, "/")
		return clip(ak)
	}
	if _, rest, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok {
		ak, _, _ := strings.Cut(rest, "/")
		return clip(ak)
	}
	// Signature Version 2: "AWS AK:sig" or AWSAccessKeyId.
	if rest, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS "); ok {
		ak, _, _ := strings.Cut(rest, ":")
		return clip(ak)
	}
	if ak := r.URL.Query().Get("AWSAccessKeyId"); ak != "" {
		return clip(ak)
	}
	return "anonymous"
}

// clip bounds a claimed key in a record.
func clip(s string) string {
	if len(s) > 128 {
		return s[:128]
	}
	return s
}

// limiter counts records per key and second.
type limiter struct {
	per int
	mu  sync.Mutex // guards win
	win map[string]*window
}

type window struct {
	second  int64
	n       int
	dropped int
}

func newLimiter(per int) *limiter { return &limiter{per: per, win: map[string]*window{}} }

// take reports whether one more record for key fits second, and how many
// were dropped for key since the last one written.
func (l *limiter) take(key string, second int64) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.win[key]
	if w == nil {
		if len(l.win) > 10000 {
			l.prune(second)
		}
		w = &window{second: second}
		l.win[key] = w
	}
	if w.second != second {
		w.second, w.n = second, 0
	}
	if w.n >= l.per {
		w.dropped++
		return false, 0
	}
	w.n++
	dropped, w.dropped = w.dropped, 0
	return true, dropped
}

// prune forgets windows of past seconds that dropped nothing. l.mu must be
// held.
func (l *limiter) prune(second int64) {
	for k, w := range l.win {
		if w.second != second && w.dropped == 0 {
			delete(l.win, k)
		}
	}
}
