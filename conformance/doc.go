// Package conformance runs the Agent NAS specification's acceptance tests
// (L0.1-L0.5 Files, L1.1-L1.7 Authority, L2 Memory) against a gateway, through its
// public interfaces only (S3, STS, the control API, and the mount when the
// caller provides one), and produces the specification's conformance.json:
// the level reached, each test's result and every known deviation.
//
// Tests that need powers no client has (tampering with the record store
// for L1.6) run only when the caller owns the gateway and passes a Tamper
// function; otherwise the result says so as a deviation.
package conformance
