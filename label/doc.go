// Package label is the vocabulary of trust labels (the specification's
// AN-06): every entry carries an origin (owner, agent, external) and a
// sensitivity (public, private, secret), plus whether a person reviewed
// it; a session's taint is the union of the labels of what it has read.
//
// Both scales are ordered, and the union of labels takes the worse of
// each: external is worse than agent, which is worse than owner; secret
// is above private, which is above public. A union is reviewed only when
// every part is. Reviewed content taints a session with its sensitivity
// but not with its origin: a person's review is how external content is
// declassified.
//
// The zero Label is what an entry written before labels existed, or by
// the owner without saying otherwise, carries: owner and private.
//
// Rules are the owner's labels on globs of a repository: each raises the
// labels of the keys it matches (never lowers them) and may mark them
// reviewed. Evaluation is pure and in process: nothing here does I/O.
package label
