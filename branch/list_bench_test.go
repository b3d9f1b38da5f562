package branch_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// benchKeys returns prefixes*perPrefix keys "p000/k00000"..., sorted.
func benchKeys(prefixes, perPrefix int) []string {
	keys := make([]string, 0, prefixes*perPrefix)
	for p := range prefixes {
		for k := range perPrefix {
			keys = append(keys, fmt.Sprintf("p%03d/k%05d", p, k))
		}
	}
	return keys
}

// BenchmarkList lists 100,000 keys under 100 prefixes, staged or
// committed: with delimiter "/" at the root (100 common prefixes, each a
// seek past its prefix), and one prefix in full (1,000 keys, read
// sequentially) as the baseline.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	keys := benchKeys(100, 1000)
	entry := &manifest.Entry{Size: 1 << 20, ETag: "0123456789abcdef0123456789abcdef", ModTime: 1}
	for _, where := range []string{"staged", "committed"} {
		b.Run(where, func(b *testing.B) {
			s := newService(b)
			if _, err := s.CreateRepo(ctx, "bench", branch.CreateRepoOptions{}); err != nil {
				b.Fatal(err)
			}
			if where == "staged" {
				entries := make([]branch.ImportEntry, len(keys))
				for i, k := range keys {
					entries[i] = branch.ImportEntry{Key: k, Entry: entry}
				}
				if err := branch.StageBulk(ctx, s, "bench", "main", entries); err != nil {
					b.Fatal(err)
				}
			} else {
				entries := func(yield func(branch.ImportEntry, error) bool) {
					for _, k := range keys {
						if !yield(branch.ImportEntry{Key: k, Entry: entry}, nil) {
							return
						}
					}
				}
				if _, err := s.Import(ctx, "bench", "main", iter.Seq2[branch.ImportEntry, error](entries), branch.CommitOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			for _, c := range []struct {
				name            string
				o               branch.ListOptions
				objects, prefix int
			}{
				{"delimiter", branch.ListOptions{Delimiter: "/", MaxKeys: 1000}, 0, 100},
				{"prefix", branch.ListOptions{Prefix: "p042/", Delimiter: "/", MaxKeys: 1000}, 1000, 0},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						res, err := s.List(ctx, "bench", "main", c.o)
						if err != nil {
							b.Fatal(err)
						}
						if len(res.Objects) != c.objects || len(res.CommonPrefixes) != c.prefix {
							b.Fatalf("listed %d objects and %d prefixes, want %d and %d",
								len(res.Objects), len(res.CommonPrefixes), c.objects, c.prefix)
						}
					}
				})
			}
		})
	}
}
