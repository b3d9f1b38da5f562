package main

import (
	"strings"

	"github.com/agentnas/nas/branch"
	nasclient "github.com/agentnas/nas/client"
)

// An address is what the object commands (ls, cp, cat, rm, mirror, du)
// take: a local path, or a key or prefix of a branch on the gateway.
//
// Gateway addresses are written
//
//	REPO/PATH              the repository's default branch (a lease's own branch)
//	REPO@BRANCH/PATH       BRANCH of one segment: it ends at the first '/'
//	REPO@BRANCH:/PATH      any BRANCH, nested ones included (cleo/run-1): it ends at ':'
//	nas://ADDRESS          any of the above, always a gateway address
//
// The ':' form applies when the text between '@' and the first ':' is a
// valid branch name and the ':' ends the address or is followed by '/';
// otherwise the branch ends at the first '/'. PATH is the key as written
// (no percent-decoding, no cleaning); "" is the branch's root.
//
// Anything else is a local path: it starts with '/', '.' or another byte
// no repository name starts with, or its first segment is not a repository
// name (3-63 of a-z, 0-9, '.', '-'), or, where a local path is allowed, it
// is a bare word without '/' (data.csv, out). So a local directory whose
// name could be a repository's (results/x.csv) is written ./results/x.csv.
// Where only gateway addresses make sense (ls, cat, rm, du) a bare REPO or
// REPO@BRANCH is the branch's root.
type address struct {
	local string           // the local path as written; "" for a gateway address
	obj   nasclient.Object // the gateway's repository, branch and key
}

// isLocal reports whether a names a local path.
func (a address) isLocal() bool { return a.local != "" }

// String writes a so that parseAddress reads it back: the local path as
// given, or the shortest gateway form that is unambiguous.
func (a address) String() string {
	if a.isLocal() {
		return a.local
	}
	o := a.obj
	switch {
	case o.Branch == "":
		return o.Repo + "/" + o.Key
	case strings.Contains(o.Branch, "/") || strings.Contains(o.Key, ":"):
		return o.Repo + "@" + o.Branch + ":/" + o.Key
	}
	return o.Repo + "@" + o.Branch + "/" + o.Key
}

// uriScheme marks an address that is always the gateway's.
const uriScheme = "nas://"

// parseAddress reads s as the address forms say. remoteOnly is for the
// commands that work on the gateway alone: a local-looking s is then a
// usage error, and a bare REPO or REPO@BRANCH names the branch's root.
func parseAddress(s string, remoteOnly bool) (address, error) {
	if s == "" {
		return address{}, usagef("an empty address")
	}
	if rest, ok := strings.CutPrefix(s, uriScheme); ok {
		return parseRemote(s, rest)
	}
	head, _, slash := strings.Cut(s, "/")
	repo, br, at := strings.Cut(head, "@")
	looksRemote := branch.ValidRepoName(repo) == nil && (slash || at && strings.Contains(br, ":") || remoteOnly)
	if !looksRemote {
		if remoteOnly {
			return address{}, usagef("%q is not a gateway address (REPO[@BRANCH]/PATH or nas://REPO[@BRANCH]/PATH)", s)
		}
		return address{local: s}, nil
	}
	return parseRemote(s, s)
}

// parseRemote reads rest (s without its scheme) as a gateway address.
func parseRemote(s, rest string) (address, error) {
	i := strings.IndexAny(rest, "@/")
	if i < 0 {
		i = len(rest)
	}
	repo := rest[:i]
	if err := branch.ValidRepoName(repo); err != nil {
		return address{}, usagef("address %q: %w", s, err)
	}
	a := address{obj: nasclient.Object{Repo: repo}}
	rest = rest[i:]
	if r, ok := strings.CutPrefix(rest, "/"); ok || rest == "" {
		a.obj.Key = r
		return a, nil
	}
	rest = rest[1:] // after '@'
	if c := strings.IndexByte(rest, ':'); c >= 0 && branch.ValidBranchName(rest[:c]) == nil &&
		(c+1 == len(rest) || rest[c+1] == '/') {
		a.obj.Branch = rest[:c]
		a.obj.Key = strings.TrimPrefix(rest[c+1:], "/")
		return a, nil
	}
	br, key, _ := strings.Cut(rest, "/")
	if err := branch.ValidBranchName(br); err != nil {
		return address{}, usagef("address %q: %w (a nested branch is written REPO@BRANCH:/PATH)", s, err)
	}
	a.obj.Branch, a.obj.Key = br, key
	return a, nil
}

// gatewayAddress parses s for a command that works on the gateway only.
func gatewayAddress(s string) (nasclient.Object, error) {
	a, err := parseAddress(s, true)
	return a.obj, err
}

// describe is how messages name o: its address.
func describe(o nasclient.Object) string { return address{obj: o}.String() }
