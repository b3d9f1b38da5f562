package memory

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// MaxRecallTests bounds the cases of one recall-test file, and
// MaxRecallTestsFile its size.
const (
	MaxRecallTests     = 200
	MaxRecallTestsFile = 256 << 10
)

// RecallTest is one golden recall test: recalling Query must return each
// note of Expect, among the first TopK notes when TopK is set.
//
//   - query: who is the champion at acme
//     expect: [mem_4kq2]
//     top_k: 3
type RecallTest struct {
	Query  string   `yaml:"query" json:"query"`
	Expect []string `yaml:"expect" json:"expect"`
	TopK   int      `yaml:"top_k,omitempty" json:"top_k,omitempty"`
}

// ParseRecallTests reads a recall-test file: a YAML list of cases, each
// with a query and at least one valid note ID, and no field it does not
// know (a misspelt top_k would silently test less).
func ParseRecallTests(b []byte) ([]RecallTest, error) {
	if len(b) > MaxRecallTestsFile {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrInvalid, RecallTestsFile, MaxRecallTestsFile)
	}
	var ts []RecallTest
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&ts); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, RecallTestsFile, err)
	}
	if len(ts) > MaxRecallTests {
		return nil, fmt.Errorf("%w: %s: more than %d cases", ErrInvalid, RecallTestsFile, MaxRecallTests)
	}
	for i, t := range ts {
		if t.Query == "" || len(t.Expect) == 0 || t.TopK < 0 {
			return nil, fmt.Errorf("%w: %s: case %d needs a query, expected note IDs and a top_k of 0 or more", ErrInvalid, RecallTestsFile, i+1)
		}
		for _, id := range t.Expect {
			if err := ValidID(id); err != nil {
				return nil, fmt.Errorf("%s: case %d: %w", RecallTestsFile, i+1, err)
			}
		}
	}
	return ts, nil
}
