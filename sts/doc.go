// Package sts serves the two STS operations runs need on the S3 endpoint
// (POST / with a form body, signed like any request): AssumeRole, which
// hands a lease out as temporary credentials every AWS SDK understands, and
// GetCallerIdentity, which tells a run who it is.
//
// AssumeRole: RoleArn names an owner-defined role (its envelope of
// repository, branch policy, view, lifetime and budgets); RoleSessionName
// names the run, so assuming again with the same name continues the same
// run on the same branch (credential refresh never forks); DurationSeconds
// sets the expiry; an IAM session Policy narrows the view (Allow statements
// of S3 actions only, anything else is MalformedPolicyDocument). Called with
// a lease's own credentials it mints a child lease, never wider than the
// caller.
package sts
