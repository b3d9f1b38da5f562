package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/glob"
)

// Structured handoff: the one way, besides a person's review, that a
// tainted run's output is declassified. The owner registers a JSON
// Schema for a glob of a repository (a configuration document,
// "handoffs"); every lease write under the glob must be a JSON document
// that validates against it (else it is refused), and a document that
// does is labelled reviewed, so a privileged session reads it without
// taking on the writer's external taint. Only what a schema can check
// (enums, IDs, bounded strings) crosses. Validation is in process, and a
// schema holds no reference (see resolveSchema).

// Handoff is one registered schema.
type Handoff struct {
	Glob   string          `json:"glob"`
	Schema json.RawMessage `json:"schema"`
}

// Bounds of handoffs.
const (
	handoffsConfig = "handoffs"
	maxHandoffs    = 32
	// MaxHandoffDoc bounds a document written under a handoff glob.
	MaxHandoffDoc = 1 << 20
)

// ErrHandoff is a document a handoff schema refuses.
var ErrHandoff = errors.New("the document does not validate against the handoff schema")

// Handoffs returns repo's handoff schemas.
func (a *Authority) Handoffs(ctx context.Context, repo string) ([]Handoff, error) {
	doc, err := a.branches.RepoConfig(ctx, repo, handoffsConfig)
	if errors.Is(err, branch.ErrNoSuchConfig) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var hs []Handoff
	return hs, json.Unmarshal(doc, &hs)
}

// SetHandoffs replaces repo's handoff schemas, each of which must resolve.
func (a *Authority) SetHandoffs(ctx context.Context, repo string, hs []Handoff) error {
	if len(hs) > maxHandoffs {
		return fmt.Errorf("%w: %d handoffs (at most %d)", ErrInvalid, len(hs), maxHandoffs)
	}
	for _, h := range hs {
		if h.Glob == "" {
			return fmt.Errorf("%w: a handoff needs a glob", ErrInvalid)
		}
		if _, err := resolveSchema(h.Schema); err != nil {
			return fmt.Errorf("%w: handoff %s: %v", ErrInvalid, h.Glob, err)
		}
	}
	if len(hs) == 0 {
		return a.branches.DeleteRepoConfig(ctx, repo, handoffsConfig)
	}
	doc, err := json.Marshal(hs)
	if err != nil {
		return err
	}
	return a.branches.SetRepoConfig(ctx, repo, handoffsConfig, doc)
}

// resolveSchema parses and resolves a schema. A handoff schema is
// self-contained: it may use no reference ($ref, $dynamicRef,
// $recursiveRef), local or remote, so nothing is ever fetched and no
// cycle of references can recur without end while a document is checked.
func resolveSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	if k := refIn(tree); k != "" {
		return nil, fmt.Errorf("a handoff schema uses no references (%s): write it out whole", k)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

// refIn is the first reference keyword anywhere in a decoded JSON value,
// or "".
func refIn(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" {
				return k
			}
			if r := refIn(x); r != "" {
				return r
			}
		}
	case []any:
		for _, x := range v {
			if r := refIn(x); r != "" {
				return r
			}
		}
	}
	return ""
}

// HandoffFor is the handoff whose glob matches a lease's write to t, or
// nil (always for the owner, whose writes are not held to schemas).
func (a *Authority) HandoffFor(ctx context.Context, p *Principal, t Target) (*Handoff, error) {
	if p.Lease == nil {
		return nil, nil
	}
	hs, err := a.Handoffs(ctx, t.Repo)
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		if glob.Match(glob.Clean(h.Glob), t.Key) {
			return &h, nil
		}
	}
	return nil, nil
}

// HandoffCheck checks a document written under handoff h (the one
// HandoffFor found when the body arrived): size bytes, of which body holds
// the first MaxHandoffDoc+1 at most. It answers nil when the document
// validates (the write is then labelled reviewed), else ErrHandoff saying
// why.
func HandoffCheck(h *Handoff, size int64, body []byte) error {
	if size > MaxHandoffDoc {
		return fmt.Errorf("%w: %s: %d bytes, at most %d", ErrHandoff, h.Glob, size, MaxHandoffDoc)
	}
	return validateHandoff(*h, body)
}

// validateHandoff validates document b against h's schema.
func validateHandoff(h Handoff, b []byte) error {
	rs, err := resolveSchema(h.Schema)
	if err != nil {
		return fmt.Errorf("%w: %s: the schema: %v", ErrHandoff, h.Glob, err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return fmt.Errorf("%w: %s: not one JSON document", ErrHandoff, h.Glob)
	}
	if err := rs.Validate(doc); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrHandoff, h.Glob, err)
	}
	return nil
}
