package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvlock"
	"github.com/agentnas/nas/lease"
)

// A collection beside other gateways: the collector takes the gc lock,
// writes the epoch (its ID, start and the live gateways) in a transaction
// that scans the gateways, and waits until each of them has acknowledged
// it in its entry. A gateway follows the epoch record (every followEvery,
// and once when it joins, before serving): it takes part through
// branch.HoldForCollection and then acknowledges with the segments its
// uploads have open. When the epoch is gone, or the lock lapsed, it stops.
// Joining reads the epoch in the transaction that writes the gateway's
// entry, so a gateway either is in the epoch's list or sees the epoch
// before it serves.

const (
	// epochSkew is the clock difference between writers a collection
	// tolerates by default (segments written after its start minus this
	// are kept; Config.ClockSkew).
	epochSkew = time.Minute
	// followEvery is how often a gateway reads the epoch record.
	followEvery = 2 * time.Second
	// ackWait bounds how long a collector waits for the others.
	ackWait = 5 * time.Minute
)

var epochKey = []byte(keyspace.Epoch + "current")

// epochRecord is the collection running across the gateways.
type epochRecord struct {
	ID      string   `json:"id"`
	Holder  string   `json:"holder"` // the collecting gateway
	Start   int64    `json:"start_unix_nano"`
	Members []string `json:"members"` // the gateways that must acknowledge
	// Phase is "" while tree nodes and commits are marked and swept,
	// phaseChunks once only chunks are: commits may go on.
	Phase string `json:"phase,omitempty"`
}

// phaseChunks is the epoch's phase once tree nodes and commits are swept.
const phaseChunks = "chunks"

// collectionPart is this gateway's part in a collection
// (branch.Part).
type collectionPart interface {
	ResumeCommits()
	End()
}

func readEpoch(r kv.Reader) (*epochRecord, error) {
	b, err := r.Get(epochKey)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var e epochRecord
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("epoch record: %w", err)
	}
	return &e, nil
}

// collect admits a collection by this gateway: it takes the cluster-wide
// lock, opens an epoch and waits until every other live gateway takes
// part.
func (m *members) collect(ctx context.Context) (branch.Admission, error) {
	unlock, err := m.locks.TryIf(ctx, gcLock, nil)
	if errors.Is(err, kvlock.ErrHeld) {
		return branch.Admission{}, fmt.Errorf("%w: another collection is running", branch.ErrPeers)
	}
	if err != nil {
		return branch.Admission{}, err
	}
	self := m.id()
	ep := epochRecord{ID: lease.NewID("gc_"), Holder: self, Start: m.now().UnixNano()}
	end := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.db.Update(ctx, func(txn kv.Txn) error { return txn.Delete(epochKey) }); err != nil {
			m.log.Warn("ending a collection's epoch (it lapses with the lock)", "err", err)
		}
		unlock()
	}
	err = m.db.Update(ctx, func(txn kv.Txn) error {
		ms, err := m.live(txn)
		if err != nil {
			return err
		}
		ep.Members = ep.Members[:0]
		for _, e := range ms {
			if e.ID != self {
				ep.Members = append(ep.Members, e.ID)
			}
		}
		b, err := json.Marshal(ep)
		if err != nil {
			return err
		}
		return txn.Set(epochKey, b)
	})
	if err != nil {
		end()
		return branch.Admission{}, err
	}
	spare, err := m.awaitAcks(ctx, &ep)
	if err != nil {
		end()
		return branch.Admission{}, err
	}
	m.log.Info("collecting beside other gateways", "epoch", ep.ID, "gateways", len(ep.Members))
	return branch.Admission{Release: end, Epoch: ep.ID, Start: ep.Start, Spare: spare, Skew: m.skew,
		Check:     func(r kv.Reader) error { return m.stillCollecting(r, ep.ID) },
		MetaSwept: func() { m.enterPhase(ep.ID, phaseChunks) }}, nil
}

// enterPhase moves this gateway's collection epoch to phase; failing, the
// others keep their commits waiting until the collection ends.
func (m *members) enterPhase(epoch, phase string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := m.db.Update(ctx, func(txn kv.Txn) error {
		ep, err := readEpoch(txn)
		if err != nil || ep == nil || ep.ID != epoch {
			return err
		}
		ep.Phase = phase
		b, err := json.Marshal(ep)
		if err != nil {
			return err
		}
		return txn.Set(epochKey, b)
	})
	if err != nil {
		m.log.Warn("telling the other gateways their commits may resume", "epoch", epoch, "err", err)
	}
}

// awaitAcks waits until every gateway of ep has acknowledged it or is no
// longer live, and returns the segments they had open.
func (m *members) awaitAcks(ctx context.Context, ep *epochRecord) ([]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, m.ackWait)
	defer cancel()
	for {
		var spare []uint64
		var waiting []string
		err := m.db.View(ctx, func(r kv.Reader) error {
			ms, err := m.live(r)
			if err != nil {
				return err
			}
			byID := map[string]member{}
			for _, e := range ms {
				byID[e.ID] = e
			}
			spare, waiting = spare[:0], waiting[:0]
			for _, id := range ep.Members {
				e, live := byID[id]
				switch {
				case !live:
				case e.Epoch == ep.ID:
					spare = append(spare, e.Open...)
				default:
					waiting = append(waiting, id+" on "+e.Host)
				}
			}
			return nil
		})
		if err == nil && len(waiting) == 0 {
			return spare, nil
		}
		if err == nil {
			err = fmt.Errorf("%w: %s did not take part in the collection within %s", branch.ErrPeers, strings.Join(waiting, ", "), m.ackWait)
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stillCollecting says whether this gateway's collection epoch may go on:
// the epoch is still the current one and its lock stays held for well
// longer than the clocks may differ, so no gateway has stopped taking
// part.
func (m *members) stillCollecting(r kv.Reader, epoch string) error {
	ep, err := readEpoch(r)
	if err != nil {
		return err
	}
	left, err := m.locks.Remaining(r, gcLock)
	if err != nil {
		return err
	}
	if ep == nil || ep.ID != epoch || left < m.locks.TTL()/3 {
		return fmt.Errorf("%w: the collection's lock lapsed (the database was slow or unreachable); it stopped", branch.ErrConflict)
	}
	return nil
}

// follow takes part in other gateways' collections until ctx ends (join
// has read the epoch once already).
func (m *members) follow(ctx context.Context) {
	t := time.NewTicker(m.followEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.part.end()
			return
		case <-t.C:
		}
		if err := m.followOnce(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("following the collection epoch", "err", err)
		}
	}
}

// part is this gateway's part in another gateway's collection.
type part struct {
	epoch   string
	p       collectionPart
	open    []uint64 // the segments open when it began
	acked   bool
	resumed bool // commits go on (the epoch reached phaseChunks)
}

func (p *part) end() {
	if p.p != nil {
		p.p.End()
	}
	*p = part{}
}

// followOnce reads the epoch and starts, acknowledges or ends this
// gateway's part in it. An error says a collection may be running that
// this gateway does not take part in (a part in progress stays until the
// record says otherwise).
func (m *members) followOnce(ctx context.Context) error {
	var ep *epochRecord
	held := false
	err := m.db.View(ctx, func(r kv.Reader) error {
		var err error
		if ep, err = readEpoch(r); err != nil {
			return err
		}
		held, err = m.locks.Held(r, gcLock)
		return err
	})
	if err != nil {
		return fmt.Errorf("read the collection epoch: %w", err)
	}
	active := ep != nil && held && ep.Holder != m.id()
	if m.part.epoch != "" && (!active || ep.ID != m.part.epoch) {
		m.log.Info("the other gateway's collection ended", "epoch", m.part.epoch)
		m.part.end()
		m.ack(ctx, "", nil)
	}
	if !active {
		return nil
	}
	if m.part.epoch == "" {
		wctx, cancel := context.WithTimeout(ctx, m.ackWait)
		open, p, err := m.hold(wctx, ep.ID, ep.Start)
		cancel()
		if err != nil {
			return fmt.Errorf("take part in collection %s: %w", ep.ID, err)
		}
		m.part = part{epoch: ep.ID, p: p, open: open}
	}
	if !m.part.acked {
		m.part.acked = m.ack(ctx, ep.ID, m.part.open)
	}
	if ep.Phase == phaseChunks && !m.part.resumed {
		m.part.p.ResumeCommits()
		m.part.resumed = true
	}
	return nil
}

// ack writes this gateway's entry with its part in epoch.
func (m *members) ack(ctx context.Context, epoch string, open []uint64) bool {
	m.mu.Lock()
	m.self.Epoch, m.self.Open = epoch, open
	m.mu.Unlock()
	if err := m.putBeat(ctx, nil); err != nil {
		m.log.Warn("acknowledging a collection", "epoch", epoch, "err", err)
		return false
	}
	return true
}
