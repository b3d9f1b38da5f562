package gateway

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/kv/kvlock"
)

// parts records what HoldForCollection calls a gateway made.
type parts struct {
	mu      sync.Mutex
	epochs  []string
	ended   int
	resumed int
}

// fakePart counts a part's calls in its parts.
type fakePart struct{ ps *parts }

func (f fakePart) ResumeCommits() { f.ps.mu.Lock(); f.ps.resumed++; f.ps.mu.Unlock() }
func (f fakePart) End()           { f.ps.mu.Lock(); f.ps.ended++; f.ps.mu.Unlock() }

func (p *parts) hold(_ context.Context, epoch string, _ int64) ([]uint64, collectionPart, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.epochs = append(p.epochs, epoch)
	return []uint64{7}, fakePart{p}, nil
}

func (p *parts) seen() ([]string, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.epochs), p.ended
}

func (p *parts) resumes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumed
}

// gateways starts n members on one store, without their follow loops
// (the test calls followOnce), each with its own record of parts.
func gateways(t *testing.T, n int) ([]*members, []*parts) {
	t.Helper()
	db, err := kv.OpenBadger(filepath.Join(t.TempDir(), "kv"), kv.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var ms []*members
	var ps []*parts
	for range n {
		locks := kvlock.New(db, keyspace.Lock, kvlock.Options{})
		m := newMembers(db, locks, "test", slog.New(slog.DiscardHandler))
		p := &parts{}
		m.hold, m.ackWait, m.followEvery = p.hold, 2*time.Second, time.Hour
		if err := m.join(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.stop)
		ms, ps = append(ms, m), append(ps, p)
	}
	return ms, ps
}

// TestEpochWaitsForEveryGateway: a collection is admitted only once the
// other gateway took part, with the segments it had open; it ends that
// part when released; and a gateway that never takes part makes the
// collection fail with ErrPeers instead of running beside it.
func TestEpochWaitsForEveryGateway(t *testing.T) {
	ctx := context.Background()
	ms, ps := gateways(t, 2)
	type result struct {
		adm branch.Admission
		err error
	}
	done := make(chan result, 1)
	go func() {
		adm, err := ms[0].collect(ctx)
		done <- result{adm, err}
	}()
	time.Sleep(300 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("collection admitted before the other gateway took part: %+v %v", r.adm, r.err)
	default:
	}
	ms[1].followOnce(ctx)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if epochs, _ := ps[1].seen(); len(epochs) != 1 || epochs[0] != r.adm.Epoch {
		t.Fatalf("parts taken: %v, want the epoch %s", epochs, r.adm.Epoch)
	}
	if !slices.Equal(r.adm.Spare, []uint64{7}) {
		t.Fatalf("spared segments: %v, want the other gateway's open one", r.adm.Spare)
	}
	if err := ms[0].db.View(ctx, r.adm.Check); err != nil {
		t.Fatalf("check during the collection: %v", err)
	}
	if epochs, _ := ps[0].seen(); len(epochs) != 0 {
		t.Fatalf("the collector took part in its own collection: %v", epochs)
	}

	// A gateway joining now takes part before it serves.
	lp := &parts{}
	m3 := newMembers(ms[0].db, kvlock.New(ms[0].db, keyspace.Lock, kvlock.Options{}), "late", slog.New(slog.DiscardHandler))
	m3.hold, m3.followEvery = lp.hold, time.Hour
	if err := m3.join(ctx); err != nil {
		t.Fatal(err)
	}
	defer m3.stop()
	if epochs, _ := lp.seen(); len(epochs) != 1 {
		t.Fatalf("a gateway joining during a collection took parts %v before serving", epochs)
	}

	// Tree nodes swept: the others' commits resume, their part goes on.
	ms[1].followOnce(ctx)
	if n := ps[1].resumes(); n != 0 {
		t.Fatalf("commits resumed %d times before the tree was swept", n)
	}
	r.adm.MetaSwept()
	ms[1].followOnce(ctx)
	if _, ended := ps[1].seen(); ps[1].resumes() != 1 || ended != 0 {
		t.Fatalf("after the tree was swept: %d resumes, %d ends; want 1 and 0", ps[1].resumes(), ended)
	}

	r.adm.Release()
	if err := ms[0].db.View(ctx, r.adm.Check); err == nil {
		t.Fatal("the check passes after the collection ended")
	}
	ms[1].followOnce(ctx)
	if _, ended := ps[1].seen(); ended != 1 {
		t.Fatalf("parts ended after the collection: %d, want 1", ended)
	}

	// Now the others never follow: the collection is refused.
	start := time.Now()
	_, err := ms[0].collect(ctx)
	if !errors.Is(err, branch.ErrPeers) {
		t.Fatalf("collection with a gateway that does not take part: %v, want ErrPeers", err)
	}
	if time.Since(start) < ms[0].ackWait {
		t.Fatalf("refused after %s, before the wait of %s", time.Since(start), ms[0].ackWait)
	}
}

// TestFenceAfterLostHeartbeats: a gateway whose heartbeat the store has
// not taken for fenceAfter stops serving (the others will count it as
// gone and collect without it); a beat that commits lifts the fence.
func TestFenceAfterLostHeartbeats(t *testing.T) {
	ms, _ := gateways(t, 1)
	m := ms[0]
	if err := m.fenced(); err != nil {
		t.Fatalf("fenced right after joining: %v", err)
	}
	later := time.Now().Add(fenceAfter + time.Second)
	m.now = func() time.Time { return later }
	if err := m.fenced(); !errors.Is(err, kv.ErrUnavailable) {
		t.Fatalf("no heartbeat for %s: %v, want a 503 fence", fenceAfter, err)
	}
	if err := m.putBeat(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := m.fenced(); err != nil {
		t.Fatalf("fenced after a heartbeat committed: %v", err)
	}
}
