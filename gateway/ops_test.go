package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv"
)

// failingDB fails every View while broken is set: a store that stopped
// answering.
type failingDB struct {
	kv.DB
	broken *atomic.Bool
	hang   *hangs // when set, a View blocks until released, ignoring ctx
}

// hangs makes Views block until release is closed, counting them.
type hangs struct {
	on      atomic.Bool
	waiting atomic.Int32
	release chan struct{}
}

var errBroken = errors.New("test: the store is broken")

func (d failingDB) View(ctx context.Context, fn func(kv.Reader) error) error {
	if d.broken.Load() {
		return errBroken
	}
	if d.hang != nil && d.hang.on.Load() {
		d.hang.waiting.Add(1)
		<-d.hang.release
		d.hang.waiting.Add(-1)
	}
	return d.DB.View(ctx, fn)
}

// openOps opens a gateway whose kv reads fail while the returned flag is
// set, serving its main and metrics handlers.
func openOps(t *testing.T) (g *gateway.Gateway, main, metrics *httptest.Server, broken *atomic.Bool) {
	t.Helper()
	g, main, metrics, broken, _ = openHanging(t)
	return g, main, metrics, broken
}

// openHanging is openOps with a switch that makes kv reads hang.
func openHanging(t *testing.T) (g *gateway.Gateway, main, metrics *httptest.Server, broken *atomic.Bool, hang *hangs) {
	t.Helper()
	broken, hang = &atomic.Bool{}, &hangs{release: make(chan struct{})}
	t.Cleanup(func() { close(hang.release) })
	g, err := gateway.Open(gateway.Config{DataDir: t.TempDir(), Owner: auth.Owner{AccessKey: crashAK, SecretKey: crashSK},
		Log: discard(), WrapDB: func(db kv.DB) kv.DB { return failingDB{DB: db, broken: broken, hang: hang} }})
	if err != nil {
		t.Fatal(err)
	}
	main, metrics = httptest.NewServer(g.Handler()), httptest.NewServer(g.MetricsHandler())
	t.Cleanup(func() {
		main.Close()
		metrics.Close()
		g.Close()
	})
	return g, main, metrics, broken, hang
}

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReadyTurns503WhenTheStoreFails(t *testing.T) {
	_, main, metrics, broken := openOps(t)
	for _, base := range []string{main.URL, metrics.URL} {
		if st, body := fetch(t, base+gateway.ReadyPath); st != http.StatusOK || body != "ok\n" {
			t.Fatalf("ready: %d %q", st, body)
		}
	}
	broken.Store(true)
	for _, base := range []string{main.URL, metrics.URL} {
		st, body := fetch(t, base+gateway.ReadyPath)
		if st != http.StatusServiceUnavailable || body != "Service Unavailable\n" {
			t.Errorf("ready with a broken store: %d %q, want 503 and nothing else", st, body)
		}
		if strings.Contains(body, errBroken.Error()) {
			t.Errorf("ready reveals the error: %q", body)
		}
		if st, _ := fetch(t, base+gateway.LivePath); st != http.StatusOK {
			t.Errorf("live with a broken store: %d, want 200", st)
		}
	}
}

func TestMetricsListenerIsOpenAndCountsGC(t *testing.T) {
	g, main, metrics, _ := openOps(t)
	if st, _ := fetch(t, main.URL+gateway.MetricsPath); st != http.StatusForbidden {
		t.Errorf("unsigned scrape of the main listener: %d, want 403", st)
	}
	if _, err := g.Branches.Collect(context.Background(), branch.GCOptions{}); err != nil {
		t.Fatal(err)
	}
	st, body := fetch(t, metrics.URL+gateway.MetricsPath)
	if st != http.StatusOK || !strings.Contains(body, `nas_gc_runs_total{result="ok"} 1`) {
		t.Errorf("metrics listener: %d, no GC run counted:\n%s", st, body)
	}
	if st, _ := fetch(t, metrics.URL+"/repo/key"); st != http.StatusNotFound {
		t.Errorf("the metrics listener serves %d for S3 paths, want 404", st)
	}
}

// TestReadyAgainstAHungStore: while the store hangs, every probe answers
// 503, and at most one check is left waiting on the store, however many
// probes come.
func TestReadyAgainstAHungStore(t *testing.T) {
	_, _, metrics, _, hang := openHanging(t)
	hang.on.Store(true)
	for range 5 {
		if st, _ := fetch(t, metrics.URL+gateway.ReadyPath); st != http.StatusServiceUnavailable {
			t.Fatalf("ready with a hung store: %d, want 503", st)
		}
	}
	if n := hang.waiting.Load(); n != 1 {
		t.Errorf("%d checks wait on the hung store, want 1", n)
	}
}

// TestReadyUnderConcurrentProbes: probes that arrive while a check runs
// share its answer rather than being told "not ready".
func TestReadyUnderConcurrentProbes(t *testing.T) {
	_, _, metrics, _, _ := openHanging(t)
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = fetch(t, metrics.URL+gateway.ReadyPath)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Errorf("probe %d: %d, want 200", i, c)
		}
	}
}
