// Package check runs pre-merge checks: programs or services the owner
// names that look at a proposal's diff and answer pass or fail before it
// may merge into a branch that requires them.
//
// Vocabulary:
//   - Check: a named check of a repository, the owner's. A webhook check
//     (`nas check add REPO NAME --url URL`) receives the Payload as a
//     POST signed with its own secret exactly as hook deliveries are
//     (x-nas-signature: t=UNIX,v1=HEX) and answers with an Answer in its
//     body; a command check (`--command PATH`) is a program inside the
//     gateway's --check-commands folder, given the Payload on stdin, in
//     the environment package program gives (no NAS_*, no AWS_*), in a
//     process group killed at its timeout; exit 0 passes.
//   - Rule: the checks a merge into a branch requires
//     (`nas check require REPO BRANCH NAME,...`).
//   - Result: one check's outcome on one proposal, bound to the digest of
//     the diff it was sent: pending, pass, fail or error. A result counts
//     only for that digest; a proposal of the same branches after either
//     moved has another digest and its own results.
//
// Checks run in the background (Run): Start writes a proposal's results
// pending and returns at once; a round claims each pending result that
// is due (in kv, so two rounds never run one attempt twice) and runs it,
// several at once. A webhook attempt that gets no 2xx answer with a
// valid Answer within the timeout is retried with backoff, MaxAttempts
// in all, then the result is error; a command runs once. Rerun makes a
// proposal's results pending again.
//
// kv layout:
//
//	CHK/<repo>/<name>          -> JSON Check (kind, URL and secret, or command)
//	CHQ/<repo>/<branch>        -> JSON []string (the names a merge into branch requires)
//	CHS/<proposal>             -> JSON Payload (what the proposal's checks are sent)
//	CHR/<proposal>/<name>      -> JSON Result (state, message, digest, attempts, claim)
//	CHP/<proposal>/<name>      -> empty, while that result is pending (what a round scans)
package check
