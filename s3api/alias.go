package s3api

import (
	"fmt"
	"strings"
)

// ParseAlias splits a header-less branch alias "REPO_BRANCH" into the
// repository and branch. Repository names never contain '_', so the first
// '_' separates them. In the branch part a run of n underscores stands for
// n/2 literal underscores when n is even, and for (n-1)/2 literal
// underscores followed by '/' when n is odd (a branch segment never starts
// with '_', so '/' always ends its run). A bucket without '_' is a plain
// repository name and returns an empty branch.
func ParseAlias(bucket string) (repo, branch string) {
	repo, enc, ok := strings.Cut(bucket, "_")
	if !ok {
		return bucket, ""
	}
	var b strings.Builder
	for i := 0; i < len(enc); {
		if enc[i] != '_' {
			b.WriteByte(enc[i])
			i++
			continue
		}
		n := 0
		for i < len(enc) && enc[i] == '_' {
			n++
			i++
		}
		b.WriteString(strings.Repeat("_", n/2))
		if n%2 == 1 {
			b.WriteByte('/')
		}
	}
	return repo, b.String()
}

// Alias returns the header-less bucket name that addresses branch of repo;
// ParseAlias reverses it.
func Alias(repo, branch string) string {
	var b strings.Builder
	b.WriteString(repo)
	b.WriteByte('_')
	for i := 0; i < len(branch); i++ {
		switch branch[i] {
		case '_':
			b.WriteString("__")
		case '/':
			b.WriteByte('_')
		default:
			b.WriteByte(branch[i])
		}
	}
	return b.String()
}

// aliasExample is shown in error messages.
var aliasExample = fmt.Sprintf("%s addresses branch %q of repository %q", Alias("data", "exp/run-1"), "exp/run-1", "data")
