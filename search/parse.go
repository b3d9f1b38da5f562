package search

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
)

// Query text: words, any of which may match (the more the better), and
// phrases in double quotes, each of which must match as a run of
// words. Everything else is a word: no operators, fields or wildcards.
//
//	renewal contract          files with either word, best first
//	"24 months" renewal       files with the phrase; renewal ranks
//
// parse splits s into its words and phrases. It refuses text that is
// not UTF-8, an unclosed quote and text with neither.
func parse(s string) (words string, phrases []string, err error) {
	if !utf8.ValidString(s) {
		return "", nil, fmt.Errorf("%w: query is not UTF-8", ErrInvalid)
	}
	parts := strings.Split(s, `"`)
	if len(parts)%2 == 0 {
		return "", nil, fmt.Errorf("%w: unclosed quote in the query", ErrInvalid)
	}
	var ws []string
	for i, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case i%2 == 0:
			ws = append(ws, p)
		default:
			phrases = append(phrases, p)
		}
	}
	words = strings.Join(ws, " ")
	if words == "" && len(phrases) == 0 {
		return "", nil, fmt.Errorf("%w: the query has no words", ErrInvalid)
	}
	return words, phrases, nil
}

// textQuery is the bleve query of s over the body field.
func textQuery(s string) (query.Query, error) {
	words, phrases, err := parse(s)
	if err != nil {
		return nil, err
	}
	var qs []query.Query
	if words != "" {
		m := bleve.NewMatchQuery(words)
		m.SetField("body")
		qs = append(qs, m)
	}
	for _, p := range phrases {
		m := bleve.NewMatchPhraseQuery(p)
		m.SetField("body")
		qs = append(qs, m)
	}
	if len(qs) == 1 {
		return qs[0], nil
	}
	return bleve.NewConjunctionQuery(qs...), nil
}
