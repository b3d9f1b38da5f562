package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvlock"
	"github.com/agentnas/nas/lease"
)

// memberTTL is how long a gateway counts as live after its last
// heartbeat in a shared metadata store; it beats every memberTTL/4.
const memberTTL = 60 * time.Second

// gcLock is the kvlock name a collection holds across gateways.
const gcLock = "gc"

// member is this gateway's entry among the gateways sharing a metadata
// store (GW/<id>).
type member struct {
	ID        string `json:"id"`
	Host      string `json:"host,omitempty"`
	Started   int64  `json:"started_unix_nano"`
	Heartbeat int64  `json:"heartbeat_unix_nano"`
}

// members announces this gateway in a shared metadata store and keeps
// the cluster-wide collection lock.
type members struct {
	db     kv.DB
	locks  *kvlock.Locks // branch work and collections
	duties *kvlock.Locks // duties (webhooks, expiry), polled slowly
	self   member
	log    *slog.Logger
	now    func() time.Time
}

func memberKey(id string) []byte { return []byte(keyspace.Gateway + id) }

func newMembers(db kv.DB, locks *kvlock.Locks, host string, log *slog.Logger) *members {
	return &members{db: db, locks: locks, duties: locks, log: log, now: time.Now,
		self: member{ID: lease.NewID("gw_"), Host: host}}
}

// join writes this gateway's entry, waiting while another gateway
// collects garbage: a gateway that came up during a sweep could
// reference a chunk the sweep is deleting. The wait and the collector's
// check of live gateways are serializable transactions on the same keys,
// so one of them sees the other.
func (m *members) join(ctx context.Context) error {
	m.self.Started = m.now().UnixNano()
	for warned := false; ; {
		busy := false
		err := m.db.Update(ctx, func(txn kv.Txn) error {
			held, err := m.locks.Held(txn, gcLock)
			if err != nil || held {
				busy = held
				return err
			}
			return m.put(txn)
		})
		if err != nil {
			return fmt.Errorf("join the gateways of the metadata store: %w", err)
		}
		if !busy {
			return nil
		}
		if !warned {
			m.log.Warn("another gateway is collecting garbage; waiting for it to finish before serving")
			warned = true
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// put writes the entry with a fresh heartbeat.
func (m *members) put(txn kv.Txn) error {
	m.self.Heartbeat = m.now().UnixNano()
	b, err := json.Marshal(m.self)
	if err != nil {
		return err
	}
	return txn.Set(memberKey(m.self.ID), b)
}

// run beats until ctx ends, then removes the entry.
func (m *members) run(ctx context.Context) {
	t := time.NewTicker(memberTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.leave()
			return
		case <-t.C:
		}
		if err := m.db.Update(ctx, m.put); err != nil && ctx.Err() == nil {
			m.log.Warn("gateway heartbeat", "err", err)
		}
	}
}

// leave deletes the entry (a killed gateway's lapses after memberTTL).
func (m *members) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(memberKey(m.self.ID)) })
	if err != nil {
		m.log.Warn("leaving the gateways of the metadata store", "err", err)
	}
}

// live lists the entries whose heartbeat is younger than memberTTL.
func (m *members) live(r kv.Reader) ([]member, error) {
	var out []member
	cut := m.now().Add(-memberTTL).UnixNano()
	err := r.Scan(kv.Prefix([]byte(keyspace.Gateway)), func(_, v []byte) error {
		var e member
		if json.Unmarshal(v, &e) == nil && e.Heartbeat > cut {
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// collect takes the cluster-wide collection lock if no other gateway is
// live (branch.ErrPeers otherwise) and returns its release; joining gateways
// wait until it is released.
func (m *members) collect(ctx context.Context) (release func(), err error) {
	return m.locks.TryIf(ctx, gcLock, func(r kv.Reader) error {
		ms, err := m.live(r)
		if err != nil {
			return err
		}
		var others []string
		for _, e := range ms {
			if e.ID != m.self.ID {
				others = append(others, e.ID+" on "+e.Host)
			}
		}
		if len(others) > 0 {
			return fmt.Errorf("%w: %s; collect with the others stopped (a killed one counts as live for %s)",
				branch.ErrPeers, strings.Join(others, ", "), memberTTL)
		}
		return nil
	})
}

// share makes the services safe beside other gateways on the same
// metadata store and joins them: budgets charged in the store, branch
// work under locks held in it, collections only alone.
func (g *Gateway) share(ctx context.Context, c Config) error {
	locks := kvlock.New(g.kv, keyspace.Lock, kvlock.Options{Log: c.Log})
	g.Branches.SetLocker(locks)
	g.Gates.SetLocker(locks)
	g.Leases.SetShared(c.Log)
	g.Branches.SetSharedQuotas()
	host, _ := os.Hostname()
	g.members = newMembers(g.kv, locks, host, c.Log)
	// Duties are held for a gateway's life; a waiter polls every 2 s.
	g.members.duties = kvlock.New(g.kv, keyspace.Lock, kvlock.Options{Log: c.Log, MaxPoll: 2 * time.Second})
	g.Branches.SetCollectGuard(g.members.collect)
	return g.members.join(ctx)
}

// peers reports whether other gateways are live on the metadata store.
func (m *members) peers(ctx context.Context) (bool, error) {
	var others bool
	err := m.db.View(ctx, func(r kv.Reader) error {
		ms, err := m.live(r)
		for _, e := range ms {
			others = others || e.ID != m.self.ID
		}
		return err
	})
	return others, err
}

// duty runs fn, background work one gateway does for all (webhook
// deliveries, expiry), only while this gateway holds the duty's lock; the
// others wait to take over when the holder stops or dies (after the
// lock's TTL).
func (m *members) duty(name string, fn func(context.Context)) func(context.Context) {
	return func(ctx context.Context) {
		unlock, err := m.duties.Lock(ctx, "duty/"+name)
		if err != nil {
			return // ctx ended
		}
		defer unlock()
		m.log.Info("this gateway took a duty", "duty", name)
		fn(ctx)
	}
}
