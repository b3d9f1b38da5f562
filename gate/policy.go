package gate

import "github.com/agentnas/nas/policy"

// The merge policy's vocabulary, from package policy (pure evaluation,
// no I/O); the gate stores policies and acts on their decisions.
type (
	// Policy is a repository's rules and guard.
	Policy = policy.Policy
	// Rule is one rule of a policy.
	Rule = policy.Rule
	// Action is what a policy decides.
	Action = policy.Action
)

// The decisions.
const (
	Merge  = policy.Merge
	Hold   = policy.Hold
	Refuse = policy.Refuse
)
