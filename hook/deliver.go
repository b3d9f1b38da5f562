package hook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/record"
)

// Payload is the body of a delivery: the recorded event, named as the
// hook asked for it.
type Payload struct {
	// ID names the delivery (the same on every attempt): HOOK-SEQ.
	ID        string            `json:"id"`
	Event     string            `json:"event"`
	Seq       uint64            `json:"seq"`
	Time      time.Time         `json:"time"`
	Repo      string            `json:"repo"`
	Branch    string            `json:"branch,omitempty"`
	Run       string            `json:"run,omitempty"`
	Lease     string            `json:"lease,omitempty"`
	Principal string            `json:"principal,omitempty"`
	Subject   record.Subject    `json:"subject,omitzero"`
	Decision  record.Decision   `json:"decision,omitzero"`
	Details   map[string]string `json:"details,omitempty"`
	// Hash is the event's hash in the recorder's chain (nas audit verify).
	Hash record.Hash `json:"hash"`
	// Link is the gate's card in the control room, on gate.pending and
	// gate.decided (Options.PublicURL, or a path on the gateway).
	Link string `json:"link,omitempty"`
}

// Options tunes a Dispatcher; the zero value is the default.
type Options struct {
	Poll    time.Duration // how often the recorder is looked at (0: 500 ms)
	Timeout time.Duration // one attempt's bound (0: 10 s)
	Backoff time.Duration // the first retry's delay, doubled up to MaxBackoff (0: 1 s)
	// MaxBackoff bounds the delay between attempts (0: 5 min).
	MaxBackoff time.Duration
	Client     *http.Client // nil: one of its own, never following redirects
	Log        *slog.Logger
	// PublicURL is the gateway's address as people reach it
	// (https://nas.example.com), for the control-room link of gate events;
	// "" gives the link as a path.
	PublicURL string
	// Changes lists what a commit changed, for object events (nil: none
	// are sent). Region names the gateway's region in them.
	Changes Changes
	Region  string
}

// Dispatcher delivers the events of every hook of a Store.
type Dispatcher struct {
	s   *Store
	o   Options
	log *slog.Logger
}

// pageSize is how many events of one hook a round considers.
const pageSize = 64

// NewDispatcher returns the dispatcher of s's hooks; Run runs it.
func NewDispatcher(s *Store, o Options) *Dispatcher {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Dispatcher{s: s, o: o, log: o.Log}
}

// Run delivers until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.o.Poll)
	defer t.Stop()
	for {
		if err := d.round(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("hook deliveries", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// parallel is how many hooks are delivered to at once, so that a slow
// or unreachable receiver does not hold the others back.
const parallel = 8

// round gives every hook that is due its turn, several at once.
func (d *Dispatcher) round(ctx context.Context) error {
	hooks, err := d.s.List(ctx, "")
	if err != nil {
		return err
	}
	now := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, parallel)
	for i := range hooks {
		h := &hooks[i]
		if now.Before(h.NextTry) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := d.pump(ctx, h); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

// pump delivers h's due events in order, stopping at the first failure.
func (d *Dispatcher) pump(ctx context.Context, h *Hook) error {
	head, err := d.s.rec.Head(ctx)
	if err != nil {
		return err
	}
	var events []record.Event
	err = d.s.rec.List(ctx, record.Filter{From: h.Cursor, Repo: h.Repo, Kinds: h.kinds(), Limit: pageSize}, func(e record.Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return err
	}
	for _, e := range events {
		ok, err := d.deliver(ctx, h, e)
		if errors.Is(err, errStopRound) {
			return nil
		}
		if err != nil || !ok {
			return err
		}
	}
	if len(events) < pageSize && head.Seq+1 > h.Cursor {
		// Nothing else of h's up to head: pass over the other events.
		err := d.update(ctx, h, func(x *Hook) { x.Cursor = max(x.Cursor, head.Seq+1) })
		if errors.Is(err, errStopRound) {
			return nil
		}
		return err
	}
	return nil
}

// link is the control room's card of the gate e names, "" for events of
// no gate.
func (d *Dispatcher) link(e record.Event) string {
	id := e.Details["gate"]
	if id == "" || (e.Kind != record.KindGateRequested && e.Kind != record.KindGateDecided) {
		return ""
	}
	return strings.TrimSuffix(d.o.PublicURL, "/") + "/_nas/ui/#/gate/" + url.PathEscape(id)
}

// deliver delivers e to h: the event itself when h asked for its kind,
// then, for a commit or merge, the objects it changed when h asked for
// object events, a page of records a delivery. What was delivered is
// kept in h (Plain, After), so a retry resumes after it. ok reports
// whether all of e was delivered and the cursor moved past it.
func (d *Dispatcher) deliver(ctx context.Context, h *Hook, e record.Event) (bool, error) {
	id := h.ID + "-" + strconv.FormatUint(e.Seq, 10)
	if h.wants(eventName(e.Kind)) && !h.Plain {
		p := Payload{ID: id, Event: eventName(e.Kind), Seq: e.Seq, Time: e.Time, Repo: e.Repo,
			Branch: e.Branch, Run: e.Run, Lease: e.Lease, Principal: e.Principal, Subject: e.Subject, Decision: e.Decision,
			Details: e.Details, Hash: e.Hash, Link: d.link(e)}
		body, err := json.Marshal(p)
		if err != nil {
			return false, err
		}
		ok, err := d.send(ctx, h, e.Seq, p.Event, id, body, func(x *Hook) { x.Plain = true })
		if !ok || err != nil {
			return false, err
		}
	}
	if h.wantsObjects() && (e.Kind == record.KindCommit || e.Kind == record.KindMerge) && e.Subject.Commit != "" && d.o.Changes != nil {
		ok, err := d.deliverObjects(ctx, h, e, id)
		if !ok || err != nil {
			return false, err
		}
	}
	err := d.update(ctx, h, func(x *Hook) { x.Cursor, x.Plain, x.After, x.Failures, x.NextTry = e.Seq+1, false, "", 0, time.Time{} })
	return err == nil, err
}

// send posts one delivery and logs it; on success done changes h (and
// the failures are forgotten), on failure the next try is scheduled.
func (d *Dispatcher) send(ctx context.Context, h *Hook, seq uint64, event, id string, body []byte, done func(*Hook)) (bool, error) {
	start := time.Now()
	status, derr := d.post(ctx, h, event, id, body)
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	dl := Delivery{Seq: seq, Event: event, Attempt: h.Failures + 1, Time: start.UTC(), Status: status, Duration: time.Since(start).Milliseconds()}
	if derr != nil {
		dl.Error = derr.Error()
	}
	err := d.update(ctx, h, func(x *Hook) {
		if derr == nil {
			done(x)
			x.Failures, x.NextTry = 0, time.Time{}
		} else {
			x.Failures++
			x.NextTry = time.Now().Add(d.backoff(x.Failures))
		}
	}, dl)
	return derr == nil && err == nil, err
}

// update changes the stored h by fn, and logs the attempts, unless h was
// removed or another round moved it (errMoved, then nil to the caller's
// caller: this round stops).
func (d *Dispatcher) update(ctx context.Context, h *Hook, fn func(*Hook), log ...Delivery) error {
	var now *Hook // Update may run the function more than once: h changes only after the commit
	err := d.s.db.Update(ctx, func(txn kv.Txn) error {
		x, err := getHook(txn, h.Repo, h.ID)
		if err != nil {
			return err
		}
		if x.Cursor != h.Cursor || x.Plain != h.Plain || x.After != h.After {
			return errMoved
		}
		fn(x)
		for _, dl := range log {
			if err := logAttempt(txn, x.ID, dl); err != nil {
				return err
			}
		}
		now = x
		return putHook(txn, x)
	})
	if errors.Is(err, ErrNotFound) || errors.Is(err, errMoved) {
		return errStopRound
	}
	if err == nil {
		*h = *now
	}
	return err
}

// errMoved is a hook another round changed meanwhile; errStopRound ends
// this round's work on a hook without an error to report.
var (
	errMoved     = errors.New("hook moved")
	errStopRound = errors.New("hook round stopped")
)

// post sends one attempt and returns the receiver's status; an error
// unless it was 2xx.
func (d *Dispatcher) post(ctx context.Context, h *Hook, event, id string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentnas-hook/1")
	req.Header.Set("x-nas-event", event)
	req.Header.Set("x-nas-delivery", id)
	req.Header.Set(SignatureHeader, Sign(h.Secret, time.Now(), body))
	resp, err := d.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, fmt.Errorf("%s: %q", resp.Status, msg)
	}
	return resp.StatusCode, nil
}

// backoff is the delay after the n-th failed attempt.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.o.Backoff
	for i := 1; i < n && b < d.o.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.o.MaxBackoff)
}

func getHook(r kv.Reader, repo, id string) (*Hook, error) {
	v, err := r.Get(hookKey(repo, id))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("hook %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var h Hook
	if err := json.Unmarshal(v, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

func putHook(txn kv.Txn, h *Hook) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return txn.Set(hookKey(h.Repo, h.ID), b)
}

// eventName is the hook event name of a recorder kind.
func eventName(k record.Kind) string {
	for n, kind := range Events {
		if kind == k && n != EventObjectCreated && n != EventObjectRemoved {
			return n
		}
	}
	return string(k)
}
