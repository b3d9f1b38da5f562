// Package metrics is the gateway's Prometheus instrumentation: one
// registry (never the global default) and typed collectors for requests,
// the kv store, the chunk store, garbage collection, the door's refusals
// and charges, gates and lazy sources.
//
// Vocabulary: Metrics owns the registry; Handler serves it in the text
// exposition format. The observers it hands out (Door, Chunks, WrapDB)
// satisfy interfaces declared by the packages they watch (auth.Observer,
// cas.Observer, kv.DB), so those packages never import Prometheus.
//
// Invariant: every label value is a bounded enum (api, operation, status,
// reason, budget, op, result). A repository, branch, key, lease or access
// key never becomes a label, so the endpoint reveals nothing about data;
// callers pass operation names from a fixed set.
//
// Concurrency: every method is safe for concurrent use.
package metrics
