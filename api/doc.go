// Package api is the control plane: JSON over HTTP under /_nas/v1/, signed
// with SigV4 using the same credentials as S3 (S3 bucket names cannot start
// with '_', so the paths never clash with buckets).
//
// Every call is POST /_nas/v1/NOUN/VERB with a JSON object body in
// snake_case. Success is 200 with a JSON object; failure is
//
//	{"error":{"code":"...","message":"...","retryable":false,"request_id":"...","details":{...}}}
//
// with an HTTP status matching the code. Writes accept an idempotency_key:
// repeating a write with the same key within 24 hours returns the first
// answer without acting again. Lists take cursor and limit and return
// next_cursor when more follow.
//
// kv layout:
//
//	I/<access key>\x00<operation>\x00<idempotency key>
//	    a write's claim while it runs, then its answer, for 24 hours
//	    (JSON: expiry, the request body's SHA-256, pending or result)
package api
