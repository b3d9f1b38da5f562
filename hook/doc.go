// Package hook delivers the flight recorder's events to webhooks the
// owner registers per repository: `nas hook add REPO URL --events ...`.
//
// A dispatcher tails the recorder. For each hook it delivers, in sequence
// order, the repository's events of the kinds the hook asked for, one at
// a time, so a receiver sees the events of a branch in the order they
// happened. A delivery is a POST of a JSON Payload signed with the hook's
// secret (Sign, Verify: HMAC-SHA256 over the timestamp and the body,
// header x-nas-signature), and a 2xx answer moves the hook's cursor past
// it. Any other answer, or none within the timeout, is retried with
// backoff until it is delivered: a later event is not sent before an
// earlier one. Every attempt is kept in the hook's delivery log, the
// newest MaxLog of them. The operation that made an event never waits
// for its delivery: the recorder is the queue, and a restart resumes from
// the stored cursor (a delivery may then arrive twice; the x-nas-delivery
// header names it).
//
// kv layout:
//
//	HK/<repo>/<id>        -> JSON Hook (URL, events, secret, cursor)
//	HD/<id>/<seq:8><try:4> -> JSON Delivery (one attempt)
package hook
