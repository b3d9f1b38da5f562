package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Door is the door's observer (auth.Observer): refusals by reason,
// budget charges and refunds.
type Door struct{ m *Metrics }

// Door returns the observer to configure the door with.
func (m *Metrics) Door() Door { return Door{m} }

// Refused counts a refusal.
func (d Door) Refused(reason string) { d.m.denials.WithLabelValues(reason).Inc() }

// Charged counts units charged to a budget.
func (d Door) Charged(budget string, n int64) { d.m.charged.WithLabelValues(budget).Add(float64(n)) }

// Refunded counts units given back to a budget.
func (d Door) Refunded(budget string, n int64) { d.m.refunded.WithLabelValues(budget).Add(float64(n)) }

// Chunks is the chunk store's observer (cas.Observer).
type Chunks struct{ m *Metrics }

// Chunks returns the observer to open the chunk store with.
func (m *Metrics) Chunks() Chunks { return Chunks{m} }

// ChunkRead counts a read.
func (c Chunks) ChunkRead(n int64, d time.Duration, err error) { c.m.chunk("read", n, d, err) }

// ChunkWritten counts a write.
func (c Chunks) ChunkWritten(n int64, d time.Duration, err error) { c.m.chunk("write", n, d, err) }

func (m *Metrics) chunk(op string, n int64, d time.Duration, err error) {
	m.chunkDuration.WithLabelValues(op).Observe(d.Seconds())
	m.chunkBytes.WithLabelValues(op).Add(float64(max(n, 0)))
	if err != nil {
		m.chunkErrors.WithLabelValues(op).Inc()
	}
}

// Sources is what the lazy-source materializer has counted so far.
type Sources struct {
	Fetches, FetchedBytes, FetchErrors int64
}

// WatchSources exports the materializer's counters, read at every scrape.
func (m *Metrics) WatchSources(stats func() Sources) {
	counter := func(name, help string, v func(Sources) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	m.reg.MustRegister(
		counter("nas_source_fetches_total", "Remote range reads started by lazy sources.", func(s Sources) int64 { return s.Fetches }),
		counter("nas_source_fetched_bytes_total", "Bytes lazy sources fetched, verified and stored.", func(s Sources) int64 { return s.FetchedBytes }),
		counter("nas_source_fetch_errors_total", "Remote fetches of lazy sources that failed.", func(s Sources) int64 { return s.FetchErrors }),
	)
}

// GateOutcome counts a proposal's status (event "proposal") or a gate
// decision's (event "decision"); both come from the gate service's fixed
// sets.
func (m *Metrics) GateOutcome(event, status string) {
	m.gateOutcomes.WithLabelValues(event, status).Inc()
}

// WatchGates exports the number of pending gates, counted by pending at
// every scrape.
func (m *Metrics) WatchGates(pending func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nas_gates_pending",
		Help: "Gates waiting for a person's decision."}, pending))
}

// Cache is one cache's counters at a scrape.
type Cache struct {
	Name         string // a fixed name: tree_nodes, segment_files, source_blocks
	Hits, Misses int64
}

// WatchCaches exports the caches' lookups by result, read at every scrape
// (nas_cache_lookups_total{cache, result}); the hit rate is
// rate(hit) / rate(hit + miss).
func (m *Metrics) WatchCaches(stats func() []Cache) {
	m.reg.MustRegister(&cacheCollector{stats: stats,
		desc: prometheus.NewDesc("nas_cache_lookups_total", "Cache lookups by cache and result (hit, miss).", []string{"cache", "result"}, nil)})
}

// cacheCollector reads every cache's counters once per scrape.
type cacheCollector struct {
	stats func() []Cache
	desc  *prometheus.Desc
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.stats() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(s.Hits), s.Name, "hit")
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(s.Misses), s.Name, "miss")
	}
}
