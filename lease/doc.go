// Package lease is the model of authority: what a lease is and what it
// allows. It holds no state and imports no storage, so every side that
// needs to reason about a lease (the gateway's authorization point in
// package auth, the mount deciding EACCES before close, a client showing
// a lease's directories) uses the same rules.
//
// Vocabulary:
//   - Lease: an authorization for one run: a repository and branch, a view
//     (rules of path globs with the actions each allows), an expiry,
//     budgets and provenance (role, principal, on_behalf_of, purpose,
//     parent). It is what the specification's lease.json describes.
//   - Run: the unit of work a lease is issued to; a run keeps its branch
//     across credential refreshes.
//   - Role: an owner-defined envelope (repository, branch policy, widest
//     view, longest lifetime, budgets) that leases of that role are issued
//     within, through STS AssumeRole or `nas lease create --role`.
//   - Grant: one more path shared into a lease's view for a limited time,
//     optionally for a single use (AFSP's share grant token).
//   - Decision: the answer to "may this lease do this action here?":
//     Allow, NotFound (outside the view: the thing does not exist for it),
//     Denied (visible, but the action is not granted), OverBudget, Expired.
//
// Invariants:
//   - A child lease is never wider than its parent: paths (by glob
//     containment), actions, expiry, budgets, branch, sensitivity, egress,
//     and it keeps every gate its parent requires (Request.Build).
//   - Budgets and TTLs are never negative; zero budgets mean no limit.
//
// Where leases are stored, how credentials are minted and how a request is
// authorized is package auth.
package lease
