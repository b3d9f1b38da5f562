// Package apiv1 is the contract of the control API, POST /_nas/v1/NOUN/VERB:
// one request and one response type for every operation, the error
// document, and the names of the operations. The gateway's handlers
// (package api) decode into these types and answer with them; package
// client, the only code that signs control requests, sends them. Nothing
// here touches storage, so every client (the CLI, the mount, export and
// import, conformance, benchmarks) links the contract without the gateway.
//
// Conventions (the specification's HTTP API and DESIGN's interfaces
// contract): every operation is a POST with a JSON body; field names are
// snake_case; lists take cursor and limit and answer next_cursor (""
// when the list is complete); writes take idempotency_key (in the body,
// or in the header IdempotencyHeader, as package client sends it); durations are
// Go durations ("90m"); times are RFC 3339 in UTC; sizes are bytes. An
// unknown field in a request is refused (InvalidArgument), so a typo is
// never silently ignored.
//
// Errors are {"error": Error} with an HTTP status; Code is one of the
// codes below and Details carries machine-readable context (reason for
// Unauthenticated, conflicts for MergeConflict, ...).
package apiv1
