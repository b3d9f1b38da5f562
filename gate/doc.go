// Package gate brings a run's work back into a protected branch: a
// proposal (an "Agent PR") computes the real diff of the merge and its
// digest, a deterministic policy decides whether it merges at once, waits
// for a person, or is refused, and a gate holds it for a person.
//
// Vocabulary:
//   - Proposal: the run's request to merge its branch into a target, with
//     the diff the gateway computed (never the agent's account of it), the
//     digest binding that diff to both heads and the lease, and the policy
//     decision with the rule that matched.
//   - Policy: an ordered list of rules the owner edits; the first rule
//     that matches decides (merge, gate or refuse); no model is involved.
//     Without a matching rule the decision is gate.
//   - Gate: a pending decision for a person, shown as the specification's
//     Gate Card. An approval is bound to the digest: if either branch moved
//     or the proposing lease was revoked, the approval is void and nothing
//     merges. A gate that times out is denied. A lease can never decide a
//     gate: deciding is an owner operation on every interface.
//   - Checks: pre-merge checks (package check) a proposal runs when its
//     gate opens; an approval, and a direct merge, into a branch that
//     requires them wait until they passed on the proposal's digest.
//
// kv layout:
//
//	PR/<id>     proposal (JSON)
//	GT/<id>     gate (JSON)
//	POL/<repo>  the repository's policy (JSON)
//	PRH/<repo>/<into>/<source head>/<target head>  the ID of the latest
//	            proposal with pre-merge checks of that diff, for the
//	            owner's direct merge of the same diff (checks.go)
package gate
