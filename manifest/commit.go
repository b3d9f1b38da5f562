package manifest

import (
	"fmt"
	"slices"

	"github.com/agentnas/nas/chunk"
)

// CommitID names a commit: the hash of its canonical encoding.
type CommitID chunk.Hash

// String returns the 64-character hex form.
func (id CommitID) String() string { return chunk.Hash(id).String() }

// IsZero reports whether id names nothing.
func (id CommitID) IsZero() bool { return chunk.Hash(id).IsZero() }

// ParseCommitID parses the hex form of a CommitID.
func ParseCommitID(s string) (CommitID, error) {
	h, err := chunk.ParseHash(s)
	if err != nil {
		return CommitID{}, fmt.Errorf("commit id: %w", err)
	}
	return CommitID(h), nil
}

// Commit is an immutable point in a repository's history.
type Commit struct {
	Tree    chunk.Hash // root of the tree; zero for an empty tree
	Parents []CommitID
	// Provenance.
	Message    string
	Principal  string
	OnBehalfOf string
	Run        string
	Lease      string
	Time       int64 // unix nanoseconds
	// Extra carries further metadata, sorted by name.
	Extra []Pair
}

const (
	tagCommitTree = iota + 1
	tagCommitParent
	tagCommitMessage
	tagCommitPrincipal
	tagCommitOnBehalfOf
	tagCommitRun
	tagCommitLease
	tagCommitTime
	tagCommitExtra
)

// Encode returns the canonical encoding of c.
func (c *Commit) Encode() []byte {
	var w enc
	if !c.Tree.IsZero() {
		w.bytes(tagCommitTree, c.Tree[:])
	}
	for _, p := range c.Parents {
		w.bytes(tagCommitParent, p[:])
	}
	w.str(tagCommitMessage, c.Message)
	w.str(tagCommitPrincipal, c.Principal)
	w.str(tagCommitOnBehalfOf, c.OnBehalfOf)
	w.str(tagCommitRun, c.Run)
	w.str(tagCommitLease, c.Lease)
	w.int(tagCommitTime, c.Time)
	for _, p := range sortedPairs(c.Extra) {
		w.bytes(tagCommitExtra, encodePair(p))
	}
	return w.b
}

// ID returns the commit's ID.
func (c *Commit) ID() CommitID { return CommitID(chunk.Sum(c.Encode())) }

// DecodeCommit decodes a Commit written by Encode.
func DecodeCommit(b []byte) (*Commit, error) {
	c := &Commit{}
	d := dec{b: b}
	for {
		tag, v, ok := d.next()
		if !ok {
			break
		}
		var err error
		switch tag {
		case tagCommitTree:
			if len(v) != chunk.HashSize {
				return nil, ErrCorrupt
			}
			copy(c.Tree[:], v)
		case tagCommitParent:
			if len(v) != chunk.HashSize {
				return nil, ErrCorrupt
			}
			var p CommitID
			copy(p[:], v)
			c.Parents = append(c.Parents, p)
		case tagCommitMessage:
			c.Message = string(v)
		case tagCommitPrincipal:
			c.Principal = string(v)
		case tagCommitOnBehalfOf:
			c.OnBehalfOf = string(v)
		case tagCommitRun:
			c.Run = string(v)
		case tagCommitLease:
			c.Lease = string(v)
		case tagCommitTime:
			c.Time, err = intOf(v)
		case tagCommitExtra:
			var p Pair
			p, err = decodePair(v)
			c.Extra = append(c.Extra, p)
		}
		if err != nil {
			return nil, fmt.Errorf("decode commit: %w", ErrCorrupt)
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode commit: %w", d.err)
	}
	c.Extra = slices.Clip(c.Extra)
	return c, nil
}
