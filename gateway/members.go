package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

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
	// Epoch is the other gateway's collection this one takes part in,
	// and Open the segments its uploads had open when it began to.
	Epoch string   `json:"epoch,omitempty"`
	Open  []uint64 `json:"open_segments,omitempty"`
}

// members announces this gateway in a shared metadata store and keeps
// the cluster-wide collection lock.
type members struct {
	db     kv.DB
	locks  *kvlock.Locks // branch work and collections
	duties *kvlock.Locks // duties (webhooks, expiry), polled slowly
	log    *slog.Logger
	now    func() time.Time

	mu   sync.Mutex // guards self
	self member
	// beat is when this gateway's entry was last written (unix
	// nanoseconds): past memberTTL the others count it as gone, so it
	// stops serving well before (fenced).
	beat atomic.Int64

	// hold takes part in another gateway's collection
	// (branch.Service.HoldForCollection).
	hold        func(ctx context.Context, epoch string, start int64) ([]uint64, collectionPart, error)
	ackWait     time.Duration // how long a collector waits for the others
	skew        time.Duration // the clock difference collections tolerate
	followEvery time.Duration // how often the epoch record is read
	part        part          // owned by the follow goroutine
	stop        func()        // ends the beat and follow loops and waits for them
}

func memberKey(id string) []byte { return []byte(keyspace.Gateway + id) }

func newMembers(db kv.DB, locks *kvlock.Locks, host string, log *slog.Logger) *members {
	return &members{db: db, locks: locks, duties: locks, log: log, now: time.Now,
		self: member{ID: lease.NewID("gw_"), Host: host}, ackWait: ackWait, followEvery: followEvery, skew: epochSkew,
		stop: func() {}}
}

// join writes this gateway's entry in a transaction that reads the
// collection epoch, then takes part in a collection in progress before it
// returns: the collector's epoch transaction scans the entries, so either
// this gateway is among those the collector waits for, or it sees the
// epoch here. It then follows the epoch record until leave.
func (m *members) join(ctx context.Context) error {
	m.mu.Lock()
	m.self.Started = m.now().UnixNano()
	m.mu.Unlock()
	err := m.putBeat(ctx, func(r kv.Reader) error {
		_, err := readEpoch(r)
		return err
	})
	if err != nil {
		return fmt.Errorf("join the gateways of the metadata store: %w", err)
	}
	// Serve only once this gateway knows it takes part in any
	// collection running.
	for {
		err := m.followOnce(ctx)
		if err == nil {
			break
		}
		m.log.Warn("waiting to take part in the collection running before serving", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("join the gateways of the metadata store: %w", err)
		case <-time.After(time.Second):
		}
	}
	// Every process on the store beats and follows from here on, not
	// only a serving one: a CLI that writes is fenced and takes part too.
	fctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.beatEvery(fctx) })
	wg.Go(func() { m.follow(fctx) })
	var once sync.Once
	m.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	return nil
}

// put writes the entry with a fresh heartbeat.
func (m *members) put(txn kv.Txn) error {
	m.mu.Lock()
	m.self.Heartbeat = m.now().UnixNano()
	b, err := json.Marshal(m.self)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	return txn.Set(memberKey(m.self.ID), b)
}

// putBeat writes the entry with a fresh heartbeat in a transaction of
// its own (with check, if not nil, run in it first), and counts the beat
// once it committed.
func (m *members) putBeat(ctx context.Context, check func(kv.Reader) error) error {
	err := m.db.Update(ctx, func(txn kv.Txn) error {
		if check != nil {
			if err := check(txn); err != nil {
				return err
			}
		}
		return m.put(txn)
	})
	if err == nil {
		m.mu.Lock()
		m.beat.Store(m.self.Heartbeat)
		m.mu.Unlock()
	}
	return err
}

// fenceAfter is how old this gateway's last heartbeat may be before it
// stops serving: the others count it as gone after memberTTL and collect
// without it, so it must stop well before, in-flight requests included.
const fenceAfter = memberTTL / 2

// fenced refuses service once this gateway's heartbeat is older than
// fenceAfter (the metadata store has not taken one for that long).
func (m *members) fenced() error {
	if age := time.Duration(m.now().UnixNano() - m.beat.Load()); age > fenceAfter {
		return fmt.Errorf("this gateway could not renew its membership for %s (the metadata store is unreachable); it serves again once it can: %w", age.Round(time.Second), kv.ErrUnavailable)
	}
	return nil
}

// fenced is the members' fence, nil for a gateway alone.
func (g *Gateway) fenced() error {
	if g.members == nil {
		return nil
	}
	return g.members.fenced()
}

// beatEvery renews the entry every memberTTL/4 until ctx ends.
func (m *members) beatEvery(ctx context.Context) {
	t := time.NewTicker(memberTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.putBeat(ctx, nil); err != nil && ctx.Err() == nil {
			m.log.Warn("gateway heartbeat", "err", err)
		}
	}
}

// leave deletes the entry (a killed gateway's lapses after memberTTL).
func (m *members) leave() {
	m.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(memberKey(m.id())) })
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

// id is this gateway's ID.
func (m *members) id() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.self.ID
}

// share makes the services safe beside other gateways on the same
// metadata store and joins them: budgets charged in the store, branch
// work under locks held in it, collections with the others taking part.
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
	g.members.hold = func(ctx context.Context, epoch string, start int64) ([]uint64, collectionPart, error) {
		p, err := g.Branches.HoldForCollection(ctx, epoch, start)
		if err != nil {
			return nil, nil, err
		}
		return p.Open, p, nil
	}
	if c.ClockSkew > 0 {
		g.members.skew = c.ClockSkew
	}
	g.Branches.SetCollectGuard(g.members.collect)
	g.Branches.SetFence(g.members.fenced)
	return g.members.join(ctx)
}

// peers reports whether other gateways are live on the metadata store.
func (m *members) peers(ctx context.Context) (bool, error) {
	var others bool
	err := m.db.View(ctx, func(r kv.Reader) error {
		ms, err := m.live(r)
		for _, e := range ms {
			others = others || e.ID != m.id()
		}
		return err
	})
	return others, err
}

// AsDuty returns fn made a duty: with other gateways on the metadata
// store, only the one holding the duty's lock runs it (the others take
// over when it stops); alone, fn itself.
func (g *Gateway) AsDuty(name string, fn func(context.Context)) func(context.Context) {
	if g.members == nil {
		return fn
	}
	return g.members.duty(name, fn)
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
