package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/metrics"
)

// scrape returns the exposition text of m.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/_nas/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestWrapDBTimesTransactionsAndFlushes(t *testing.T) {
	db, err := kv.OpenBadger(t.TempDir(), kv.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := metrics.New()
	d := m.WrapDB(db)
	ctx := context.Background()
	if err := d.Update(ctx, func(tx kv.Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := d.View(ctx, func(r kv.Reader) error { _, err := r.Get([]byte("k")); return err }); err != nil {
		t.Fatal(err)
	}
	b := d.Batch(ctx)
	if err := b.Set([]byte("b"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, m)
	for _, op := range []string{"view", "update", "batch_flush"} {
		if !strings.Contains(out, `nas_kv_operation_duration_seconds_count{op="`+op+`"} 1`) {
			t.Errorf("no %s timed:\n%s", op, out)
		}
	}
}

func TestObserversCountWhatTheyAreTold(t *testing.T) {
	m := metrics.New()
	m.ObserveRequest(metrics.Request{API: "s3", Status: 404, Sent: 10, Duration: time.Millisecond})
	m.Door().Refused("over_budget")
	m.Door().Charged("bytes_read", 100)
	m.Chunks().ChunkRead(4096, time.Millisecond, nil)
	out := scrape(t, m)
	for _, want := range []string{
		`nas_requests_total{api="s3",operation="unknown",status="404"} 1`,
		`nas_sent_bytes_total{api="s3"} 10`,
		`nas_lease_denials_total{reason="over_budget"} 1`,
		`nas_lease_budget_charged_total{budget="bytes_read"} 100`,
		`nas_chunk_bytes_total{op="read"} 4096`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s", want)
		}
	}
}
