// Package auth is the gateway's one door: it stores leases, roles, grants
// and budgets, mints and resolves temporary credentials, and is the only
// place where a request's principal is established and an operation is
// authorized.
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
//	OS/<session id>          owner session (GetSessionToken, JSON)
//
// Budget accounting lives in memory and is written behind to LU/ every
// second (Run) and on Close, so a crash can forget at most about a second
// of consumption; every request of a lease is charged to the lease and to
// each of its ancestors. Revoking a lease revokes every descendant in the
// same transaction.
package auth
