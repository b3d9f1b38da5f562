package hook

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/record"
)

// Errors of the store.
var (
	ErrNotFound = errors.New("hook: not found")
	ErrInvalid  = errors.New("hook: invalid argument")
)

// Events are the event names a hook may ask for, and the recorder kinds
// they stand for.
var Events = map[string]record.Kind{
	"gate.pending":   record.KindGateRequested,
	"gate.decided":   record.KindGateDecided,
	"commit":         record.KindCommit,
	"merge":          record.KindMerge,
	"branch.created": record.KindBranchCreated,
	"branch.deleted": record.KindBranchDeleted,
	"lease.revoked":  record.KindLeaseRevoked,
	"source.push":    record.KindSourcePush,
	"check.finished": record.KindCheck,
	// Object events: what each commit and merge changed, one S3 event
	// record per key (see objects.go).
	EventObjectCreated: record.KindCommit,
	EventObjectRemoved: record.KindCommit,
}

// The object event names.
const (
	EventObjectCreated = "object.created"
	EventObjectRemoved = "object.removed"
)

// Limits of the store.
const (
	MaxHooks  = 16   // hooks of one repository
	MaxURL    = 2048 // bytes of a hook's URL
	MaxLog    = 200  // attempts kept in a hook's delivery log
	secretLen = 32
)

// Hook is one registered webhook and where its delivery stands.
type Hook struct {
	ID      string    `json:"id"`
	Repo    string    `json:"repo"`
	URL     string    `json:"url"`
	Events  []string  `json:"events"`
	Secret  string    `json:"secret"`
	Created time.Time `json:"created"`
	// Cursor is the first recorder sequence not yet delivered (or passed).
	Cursor uint64 `json:"cursor"`
	// Failures counts the failed attempts at the event at Cursor; NextTry
	// is when the next attempt is due.
	Failures int       `json:"failures,omitempty"`
	NextTry  time.Time `json:"next_try,omitzero"`
	// Plain: the event at Cursor itself was delivered; After: the object
	// events of its commit were delivered up to this key.
	Plain bool   `json:"plain,omitempty"`
	After string `json:"after,omitempty"`
}

// kinds returns the recorder kinds h asked for.
func (h *Hook) kinds() []record.Kind {
	out := make([]record.Kind, 0, len(h.Events)+1)
	for _, e := range h.Events {
		if !slices.Contains(out, Events[e]) {
			out = append(out, Events[e])
		}
	}
	if h.wantsObjects() && !slices.Contains(out, record.KindMerge) {
		out = append(out, record.KindMerge)
	}
	return out
}

// wants reports whether h asked for event name.
func (h *Hook) wants(name string) bool { return slices.Contains(h.Events, name) }

// wantsObjects reports whether h asked for object events.
func (h *Hook) wantsObjects() bool { return h.wants(EventObjectCreated) || h.wants(EventObjectRemoved) }

// Delivery is one attempt to deliver an event.
type Delivery struct {
	Seq      uint64    `json:"seq"`
	Event    string    `json:"event"`
	Attempt  int       `json:"attempt"`
	Time     time.Time `json:"time"`
	Status   int       `json:"status"` // the receiver's HTTP status; 0 when none came
	Error    string    `json:"error,omitempty"`
	Duration int64     `json:"duration_ms"`
}

// Store keeps the hooks of every repository.
type Store struct {
	db  kv.DB
	rec *record.Recorder
}

// NewStore returns the hooks kept in db; new hooks start after rec's
// current head.
func NewStore(db kv.DB, rec *record.Recorder) *Store { return &Store{db: db, rec: rec} }

func hookKey(repo, id string) []byte { return []byte(keyspace.Hook + repo + "/" + id) }

func logPrefix(id string) []byte { return []byte(keyspace.HookDelivery + id + "/") }

func logKey(id string, seq uint64, attempt int) []byte {
	k := logPrefix(id)
	k = binary.BigEndian.AppendUint64(k, seq)
	return binary.BigEndian.AppendUint32(k, uint32(attempt))
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// CheckURL accepts an http or https URL with a host and no credentials
// (a webhook's, or a check's).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || len(raw) > MaxURL || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("hook URL %.100q: want http(s)://HOST/PATH without credentials, at most %d bytes: %w", raw, MaxURL, ErrInvalid)
	}
	return nil
}

// checkEvents returns events sorted, without repeats, all known.
func checkEvents(events []string) ([]string, error) {
	if len(events) == 0 {
		return nil, fmt.Errorf("a hook needs events (any of %v): %w", names(), ErrInvalid)
	}
	out := slices.Clone(events)
	for _, e := range out {
		if _, ok := Events[e]; !ok {
			return nil, fmt.Errorf("unknown event %q (want any of %v): %w", e, names(), ErrInvalid)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func names() []string {
	var out []string
	for n := range Events {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Add registers a hook of repo: events from now on are delivered to
// rawURL. The answer holds the secret, which only Add shows.
func (s *Store) Add(ctx context.Context, repo, rawURL string, events []string) (*Hook, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	events, err := checkEvents(events)
	if err != nil {
		return nil, err
	}
	head, err := s.rec.Head(ctx)
	if err != nil {
		return nil, err
	}
	h := &Hook{ID: "hk_" + randomHex(8), Repo: repo, URL: rawURL, Events: events, Secret: randomHex(secretLen),
		Created: time.Now().UTC(), Cursor: head.Seq + 1}
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		n := 0
		err := txn.Scan(kv.Prefix([]byte(keyspace.Hook+repo+"/")), func(_, _ []byte) error { n++; return nil })
		if err != nil {
			return err
		}
		if n >= MaxHooks {
			return fmt.Errorf("repository %s already has %d hooks: %w", repo, n, ErrInvalid)
		}
		b, _ := json.Marshal(h)
		return txn.Set(hookKey(repo, h.ID), b)
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// List returns the hooks of repo ("": of every repository).
func (s *Store) List(ctx context.Context, repo string) ([]Hook, error) {
	p := keyspace.Hook
	if repo != "" {
		p += repo + "/"
	}
	var out []Hook
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(p)), func(_, v []byte) error {
			var h Hook
			if err := json.Unmarshal(v, &h); err != nil {
				return nil // a record this version cannot read is not a hook of it
			}
			out = append(out, h)
			return nil
		})
	})
	return out, err
}

// Remove deletes hook id of repo and its delivery log.
func (s *Store) Remove(ctx context.Context, repo, id string) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		if _, err := txn.Get(hookKey(repo, id)); errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("hook %s of %s: %w", id, repo, ErrNotFound)
		} else if err != nil {
			return err
		}
		var logs [][]byte
		err := txn.Scan(kv.Prefix(logPrefix(id)), func(k, _ []byte) error { logs = append(logs, slices.Clone(k)); return nil })
		if err != nil {
			return err
		}
		for _, k := range logs {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return txn.Delete(hookKey(repo, id))
	})
}

// Deliveries returns the delivery log of hook id of repo, newest first.
func (s *Store) Deliveries(ctx context.Context, repo, id string) ([]Delivery, error) {
	var out []Delivery
	err := s.db.View(ctx, func(r kv.Reader) error {
		if _, err := r.Get(hookKey(repo, id)); errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("hook %s of %s: %w", id, repo, ErrNotFound)
		} else if err != nil {
			return err
		}
		rg := kv.Prefix(logPrefix(id))
		rg.Reverse = true
		return r.Scan(rg, func(_, v []byte) error {
			var d Delivery
			if json.Unmarshal(v, &d) == nil {
				out = append(out, d)
			}
			return nil
		})
	})
	return out, err
}

// logAttempt appends d to hook id's log and drops what is past MaxLog.
func logAttempt(txn kv.Txn, id string, d Delivery) error {
	b, _ := json.Marshal(d)
	if err := txn.Set(logKey(id, d.Seq, d.Attempt), b); err != nil {
		return err
	}
	rg := kv.Prefix(logPrefix(id))
	rg.Reverse = true
	n := 0
	var old [][]byte
	err := txn.Scan(rg, func(k, _ []byte) error {
		if n++; n > MaxLog {
			old = append(old, slices.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
