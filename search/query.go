package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2"
	bsearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// maxExamined bounds the documents one query looks at: hits of other
// commits, hidden keys and quarantine count. A query that finds fewer
// than its limit among them answers what it found.
const maxExamined = 2000

// Query is a search of one commit.
type Query struct {
	Repo string
	// Branch has seen Commit; a first build walks Commit's tree through
	// it.
	Branch string
	Commit manifest.CommitID
	Text   string // see parse
	Prefix string // keys under it only
	// Filter is the caller's view: only its Ranges are searched and only
	// keys Match accepts are answered. Nil: every key.
	Filter            *branch.Filter
	IncludeQuarantine bool
	Limit             int
}

// Hit is one file of the commit that matched, best first.
type Hit struct {
	Key   string
	Entry *manifest.Entry
	Score float64
	// Start..End are the snippet's lines (1-based, inclusive) and Off
	// the byte offset of line Start; Lines are those lines whole (what
	// an evidence pointer to them hashes) and Snippet their first
	// MaxSnippetBytes at most (what the caller is shown).
	Start, End int
	Off        int64
	Lines      []byte
	Snippet    []byte
}

// Search answers q: the index is brought to q.Commit first.
func (s *Service) Search(ctx context.Context, q Query) ([]Hit, Info, error) {
	text, err := textQuery(q.Text)
	if err != nil {
		return nil, Info{}, err
	}
	if q.Limit <= 0 {
		return nil, Info{}, fmt.Errorf("%w: limit %d", ErrInvalid, q.Limit)
	}
	var hits []Hit
	var info Info
	err = s.with(q.Repo, func(x *index) error {
		var err error
		if info, err = x.ensure(ctx, s.b, q.Branch, q.Commit); err != nil {
			return err
		}
		hits, err = x.search(ctx, s.b, &q, bleveQuery(&q, text))
		// Equal scores come in the index's order, which a rebuild changes.
		slices.SortStableFunc(hits, func(a, b Hit) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.Key, b.Key))
		})
		return err
	})
	return hits, info, err
}

// search pages through the index's matches until q.Limit hits of
// q.Commit are found, or maxExamined matches were looked at.
func (x *index) search(ctx context.Context, b *branch.Service, q *Query, bq query.Query) ([]Hit, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.idx == nil {
		return nil, errStale
	}
	page := max(2*q.Limit, 50)
	hits := []Hit{}
	for from := 0; len(hits) < q.Limit && from < maxExamined; {
		req := bleve.NewSearchRequestOptions(bq, page, from, false)
		req.IncludeLocations = true
		res, err := x.idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, dm := range res.Hits {
			h, ok, err := x.check(ctx, b, q, dm)
			if err != nil {
				return nil, err
			}
			if ok {
				hits = append(hits, h)
			}
			if len(hits) == q.Limit {
				break
			}
		}
		from += len(res.Hits)
		if len(res.Hits) < page || uint64(from) >= res.Total {
			break
		}
	}
	return hits, nil
}

// check makes a match a hit when its document is the commit's entry of
// a key the query may answer, reading the file for its snippet.
func (x *index) check(ctx context.Context, b *branch.Service, q *Query, dm *bsearch.DocumentMatch) (Hit, bool, error) {
	ident, key, ok := splitID(dm.ID)
	if !ok || !strings.HasPrefix(key, q.Prefix) || q.Filter != nil && !q.Filter.Match(key) ||
		!q.IncludeQuarantine && Quarantined(key) {
		return Hit{}, false, nil
	}
	e, err := b.GetAt(ctx, x.repo, q.Commit, key)
	if errors.Is(err, branch.ErrNoSuchKey) {
		return Hit{}, false, nil
	}
	if err != nil {
		return Hit{}, false, err
	}
	if id, ok := identity(e); !ok || id != ident {
		return Hit{}, false, nil
	}
	data, err := readEntry(ctx, b, e)
	if err != nil {
		return Hit{}, false, fmt.Errorf("read %s: %w", key, err)
	}
	var terms [][]int
	for _, locs := range dm.Locations["body"] {
		offs := make([]int, 0, len(locs))
		for _, l := range locs {
			offs = append(offs, int(l.Start))
		}
		terms = append(terms, offs)
	}
	sn, ok := pick(data, terms)
	if !ok {
		return Hit{}, false, nil
	}
	return Hit{Key: key, Entry: e, Score: dm.Score, Start: sn.Start, End: sn.End, Off: int64(sn.Off), Lines: sn.Lines, Snippet: sn.Text}, true, nil
}

// bleveQuery is text, searched only where q may find hits: under its
// prefix and view (filters, which do not score), outside quarantine.
func bleveQuery(q *Query, text query.Query) query.Query {
	bq := bleve.NewBooleanQuery()
	bq.AddMust(text)
	var filters []query.Query
	if q.Prefix != "" {
		filters = append(filters, underPrefix(q.Prefix))
	}
	if v := inView(q.Filter); v != nil {
		filters = append(filters, v)
	}
	if len(filters) > 0 {
		bq.AddFilter(bleve.NewConjunctionQuery(filters...))
	}
	if !q.IncludeQuarantine {
		qq := bleve.NewBoolFieldQuery(true)
		qq.SetField("quarantine")
		bq.AddMustNot(qq)
	}
	return bq
}

// underPrefix matches the keys under p: one term of dirs when p ends in
// "/", else the keys' prefix.
func underPrefix(p string) query.Query {
	if strings.HasSuffix(p, "/") {
		t := bleve.NewTermQuery(p)
		t.SetField("dirs")
		return t
	}
	pq := bleve.NewPrefixQuery(p)
	pq.SetField("key")
	return pq
}

// inView matches the keys in f's ranges (nil: every key).
func inView(f *branch.Filter) query.Query {
	if f == nil {
		return nil
	}
	if len(f.Ranges) == 0 {
		return bleve.NewMatchNoneQuery()
	}
	qs := make([]query.Query, 0, len(f.Ranges))
	for _, r := range f.Ranges {
		switch {
		case r.Start == "" && r.End == "":
			return nil
		case strings.HasSuffix(r.Start, "/") && r.End == prefixEnd(r.Start):
			qs = append(qs, underPrefix(r.Start))
		default:
			tr := bleve.NewTermRangeQuery(r.Start, r.End)
			tr.SetField("key")
			qs = append(qs, tr)
		}
	}
	return bleve.NewDisjunctionQuery(qs...)
}

// prefixEnd is the first key after every key with prefix p ("" when
// there is none).
func prefixEnd(p string) string {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
