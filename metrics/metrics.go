package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// latency are the histogram buckets of request and store latencies, in
// seconds: from a cached kv read to a large upload.
var latency = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Metrics holds the gateway's registry and its collectors.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.CounterVec   // api, operation, status
	duration *prometheus.HistogramVec // api, operation
	received *prometheus.CounterVec   // api
	sent     *prometheus.CounterVec   // api

	kvDuration *prometheus.HistogramVec // op
	kvErrors   *prometheus.CounterVec   // op

	chunkDuration *prometheus.HistogramVec // op
	chunkBytes    *prometheus.CounterVec   // op
	chunkErrors   *prometheus.CounterVec   // op

	gcRuns    *prometheus.CounterVec // result
	gcBytes   prometheus.Counter
	gcChunks  prometheus.Counter
	gcSegment prometheus.Counter

	denials  *prometheus.CounterVec // reason
	charged  *prometheus.CounterVec // budget
	refunded *prometheus.CounterVec // budget

	gateOutcomes *prometheus.CounterVec // event, status
}

// New returns Metrics with every collector registered, the Go runtime's
// and the process's included.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.registerRequests()
	m.registerStores()
	m.registerDoor()
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) registerRequests() {
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_requests_total",
		Help: "Requests served, by API (s3, control, sts), operation and HTTP status."}, []string{"api", "operation", "status"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nas_request_duration_seconds",
		Help: "Time from a request's arrival to the end of its response, by API and operation.", Buckets: latency},
		[]string{"api", "operation"})
	m.received = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_received_bytes_total",
		Help: "Request body bytes read, by API."}, []string{"api"})
	m.sent = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_sent_bytes_total",
		Help: "Response body bytes written, by API."}, []string{"api"})
	m.reg.MustRegister(m.requests, m.duration, m.received, m.sent)
}

func (m *Metrics) registerStores() {
	m.kvDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nas_kv_operation_duration_seconds",
		Help: "Time of kv transactions (view, update) and batch flushes.", Buckets: latency}, []string{"op"})
	m.kvErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_kv_errors_total",
		Help: "kv transactions and batch flushes that failed."}, []string{"op"})
	m.chunkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nas_chunk_operation_duration_seconds",
		Help: "Time of chunk-store reads and writes (one call at the store's entry points).", Buckets: latency}, []string{"op"})
	m.chunkBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_chunk_bytes_total",
		Help: "Bytes read from and written to the chunk store (writes before deduplication)."}, []string{"op"})
	m.chunkErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_chunk_errors_total",
		Help: "Chunk-store reads and writes that failed."}, []string{"op"})
	m.gcRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_gc_runs_total",
		Help: "Garbage collections, by result (ok, error)."}, []string{"result"})
	m.gcBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "nas_gc_reclaimed_bytes_total",
		Help: "Bytes of chunks garbage collection deleted."})
	m.gcChunks = prometheus.NewCounter(prometheus.CounterOpts{Name: "nas_gc_reclaimed_chunks_total",
		Help: "Chunks garbage collection deleted."})
	m.gcSegment = prometheus.NewCounter(prometheus.CounterOpts{Name: "nas_gc_reclaimed_segment_bytes_total",
		Help: "Bytes of segment files garbage collection deleted from disk."})
	m.reg.MustRegister(m.kvDuration, m.kvErrors, m.chunkDuration, m.chunkBytes, m.chunkErrors,
		m.gcRuns, m.gcBytes, m.gcChunks, m.gcSegment)
}

func (m *Metrics) registerDoor() {
	m.denials = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_lease_denials_total",
		Help: "Refusals by the door, by reason: authentication failures (signature, unknown_key, expired, ...) " +
			"and authorization answers (not_found, denied, over_budget)."}, []string{"reason"})
	m.charged = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_lease_budget_charged_total",
		Help: "Units charged to lease budgets: requests, bytes_read, bytes_written."}, []string{"budget"})
	m.refunded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_lease_budget_refunded_total",
		Help: "Units given back to lease budgets (a transfer that did not happen)."}, []string{"budget"})
	m.gateOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nas_gate_outcomes_total",
		Help: "Proposals by status (merged, pending: held at a gate, refused, conflict, up_to_date) and gate decisions (approved, denied, void)."},
		[]string{"event", "status"})
	m.reg.MustRegister(m.denials, m.charged, m.refunded, m.gateOutcomes)
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Request is one served request as the metrics count it.
type Request struct {
	API       string // s3, control, sts
	Operation string // from a bounded set, "unknown" when unnamed
	Status    int
	Received  int64 // request body bytes read
	Sent      int64 // response body bytes written
	Duration  time.Duration
}

// ObserveRequest counts r.
func (m *Metrics) ObserveRequest(r Request) {
	if r.Operation == "" {
		r.Operation = "unknown"
	}
	m.requests.WithLabelValues(r.API, r.Operation, strconv.Itoa(r.Status)).Inc()
	m.duration.WithLabelValues(r.API, r.Operation).Observe(r.Duration.Seconds())
	m.received.WithLabelValues(r.API).Add(float64(r.Received))
	m.sent.WithLabelValues(r.API).Add(float64(r.Sent))
}

// GC is one garbage collection as the metrics count it.
type GC struct {
	Chunks       int
	Bytes        int64
	SegmentBytes int64
	Err          error
}

// ObserveGC counts a garbage collection.
func (m *Metrics) ObserveGC(g GC) {
	if g.Err != nil {
		m.gcRuns.WithLabelValues("error").Inc()
	} else {
		m.gcRuns.WithLabelValues("ok").Inc()
	}
	m.gcChunks.Add(float64(g.Chunks))
	m.gcBytes.Add(float64(g.Bytes))
	m.gcSegment.Add(float64(g.SegmentBytes))
}
