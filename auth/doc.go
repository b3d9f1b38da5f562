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
//	MT/<sha-256 of token>    the lease of an MCP bearer token (JSON)
//	WS/<sha-256 of token>    a control-room session (web sign-in, JSON)
//	RT/<run>                 the run's session taint (label.Taint, JSON)
//
// Temporary credentials are of two kinds, told apart by the ID their
// signed session token names: a lease ("lse_…", a run's narrow view) or
// an owner session ("ses_…", GetSessionToken: the owner until it
// expires, or until the owner's keys change). A session's principal has
// no lease, so every door treats it as the owner; it cannot mint another
// session.
//
// The control room (/_nas/ui/) signs the owner in with the owner's keys
// (SignIn) and carries a session cookie: Authenticate takes it on the
// control API alone, with the session's CSRF token and from the gateway's
// own origin, as the owner (websession.go).
//
// A web identity (AssumeRoleWithWebIdentity) is the one request no key
// signs: AssumeWithWebIdentity verifies its OpenID Connect token against
// the role's trust (go-oidc: the issuer's discovered keys, cached and
// refreshed on an unknown kid at a rationed pace, or the role's static
// JWKS) and returns the role and the verified issuer and subject; it
// never yields a Principal, so nothing can mistake it for the owner.
//
// Budget accounting lives in memory and is written behind to LU/ every
// second (Run) and on Close, so a crash can forget at most about a second
// of consumption; every request of a lease is charged to the lease and to
// each of its ancestors. Revoking a lease revokes every descendant in the
// same transaction.
package auth
