// Package sts serves the STS operations runs and their owner need on the
// S3 endpoint (POST / with a form body): AssumeRole, which hands a lease
// out as temporary credentials every AWS SDK understands;
// AssumeRoleWithWebIdentity, the same for a workload that proves itself
// with an OpenID Connect token instead of a key; GetSessionToken, which
// gives the owner short-lived credentials that act as the owner; and
// GetCallerIdentity, which tells a caller who it is.
//
// AssumeRole: RoleArn names an owner-defined role (its envelope of
// repository, branch policy, view, lifetime and budgets); RoleSessionName
// names the run, so assuming again with the same name continues the same
// run on the same branch (credential refresh never forks); DurationSeconds
// sets the expiry; an IAM session Policy narrows the view (Allow statements
// of S3 actions only, anything else is MalformedPolicyDocument). Called with
// a lease's own credentials it mints a child lease, never wider than the
// caller.
//
// AssumeRoleWithWebIdentity is not signed: the door (auth) verifies the
// WebIdentityToken against the role's OIDC trust, and the lease is then
// issued by the same code as AssumeRole's (issueInRole), with the web
// identity (issuer, subject) recorded as who assumed the role. A run a
// web identity started is continued only by that identity.
//
// Every other action is signed, and acts only on the parameters the
// signature covers: the body is read once to find the action, then again
// through the verified body.
package sts
