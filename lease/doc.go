// Package lease is the single point of authorization. Every interface (S3,
// the control API, later the mount) asks it the same question: may this
// principal do this operation on this repository, branch and key? The
// answer is one Decision: Allow, NotFound (outside the lease's view: the
// thing does not exist for it), Denied (visible, but the action is not
// granted), OverBudget, or Expired (expired or revoked). Interfaces only
// translate the answer.
//
// Vocabulary:
//   - Lease: an authorization for one run: a repository and branch, a view
//     (rules of path globs with the actions each allows), an expiry,
//     budgets and provenance (role, principal, on_behalf_of, purpose,
//     parent). It is what the specification's lease.json describes.
//   - Run: the unit of work a lease is issued to; a run keeps its branch
//     across credential refreshes.
//   - Role: an owner-defined envelope (repository, branch policy, widest
//     view, longest lifetime, budgets) that STS AssumeRole issues leases
//     within.
//   - Grant: one more path shared into a lease's view for a limited time,
//     optionally for a single use (AFSP's share grant token).
//   - Credentials: an access key, a secret derived on the server from the
//     key (never stored, never in the token) and a session token, a JWT
//     signed by the gateway naming the lease.
//
// Invariants:
//   - A child lease is never wider than its parent: paths (by glob
//     containment), actions, expiry, budgets and branch.
//   - Revoking a lease revokes every descendant in the same transaction;
//     every request reads the lease's live state, so revocation is
//     effective on the next request.
//   - Budgets are charged to the lease and every ancestor.
//
// kv layout:
//
//	LS/<lease id>            lease (JSON)
//	LK/<access key id>       lease id
//	LC/<parent id>/<child>   children index, for cascading revocation
//	LR/<repo>/<role>/<run>   the run's branch and latest lease, so
//	                         AssumeRole with the same session continues it
//	LU/<lease id>            usage counters (JSON), written behind
//	RO/<role>                role envelope (JSON)
//	KEY/lease                the gateway's token and secret keys
package lease
