package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
)

// The states of a result.
const (
	StatePending = "pending"
	StatePass    = "pass"
	StateFail    = "fail"
	StateError   = "error"
)

// MaxChanges bounds the change lines a Payload carries; Counts and
// Truncated tell the rest.
const MaxChanges = 1000

// Change is one change line of a proposal's diff.
type Change struct {
	Kind    string `json:"kind"` // A, M or D
	Key     string `json:"key"`
	OldETag string `json:"old_etag,omitempty"`
	NewETag string `json:"new_etag,omitempty"`
	NewSize int64  `json:"new_size,omitempty"`
}

// Payload is what a check is sent: the proposal, its diff and digest.
// The gateway fills Check, Attempt and Time per attempt.
type Payload struct {
	Check      string         `json:"check"`
	Attempt    int            `json:"attempt"`
	Time       time.Time      `json:"time"`
	ProposalID string         `json:"proposal_id"`
	GateID     string         `json:"gate_id,omitempty"`
	Repo       string         `json:"repo"`
	Branch     string         `json:"branch"` // the proposal's source branch
	Into       string         `json:"into"`
	Base       string         `json:"base"`
	SourceHead string         `json:"source_head"`
	TargetHead string         `json:"target_head"`
	DiffSHA256 string         `json:"diff_sha256"`
	Intent     string         `json:"intent,omitempty"`
	Run        string         `json:"run,omitempty"`
	Lease      string         `json:"lease,omitempty"`
	Counts     map[string]int `json:"counts"`
	Changes    []Change       `json:"changes"`
	Truncated  bool           `json:"truncated,omitempty"`
}

// Result is one check's result on one proposal, bound to Digest.
type Result struct {
	Name     string    `json:"name"`
	State    string    `json:"state"` // pending, pass, fail, error
	Message  string    `json:"message,omitempty"`
	Digest   string    `json:"diff_sha256"`
	Required bool      `json:"required"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Attempts int       `json:"attempts"`
	// NextTry is when a retry is due; Claim, until when a round runs the
	// attempt Try (another round leaves it alone meanwhile, and an
	// outcome for another Try is dropped).
	NextTry time.Time `json:"next_try,omitzero"`
	Claim   time.Time `json:"claim,omitzero"`
	Try     string    `json:"try,omitempty"`
}

// Planned is a check a proposal runs, and whether its target requires it.
type Planned struct {
	Name     string
	Required bool
}

func subjectKey(proposal string) []byte { return []byte(keyspace.CheckSubject + proposal) }

func resultPrefix(proposal string) []byte { return []byte(keyspace.CheckResult + proposal + "/") }

func resultKey(proposal, name string) []byte { return append(resultPrefix(proposal), name...) }

func pendingKey(proposal, name string) []byte {
	return []byte(keyspace.CheckPending + proposal + "/" + name)
}

// Plan returns the checks a proposal of repo into branch runs: those the
// branch requires and those asked, each once; an asked name must be a
// check of repo.
func (s *Service) Plan(ctx context.Context, repo, into string, asked []string) ([]Planned, error) {
	req, err := s.Required(ctx, repo, into)
	if err != nil {
		return nil, err
	}
	var out []Planned
	for _, n := range req {
		out = append(out, Planned{Name: n, Required: true})
	}
	for _, n := range asked {
		if slices.ContainsFunc(out, func(p Planned) bool { return p.Name == n }) {
			continue
		}
		if _, err := s.Get(ctx, repo, n); err != nil {
			return nil, err
		}
		out = append(out, Planned{Name: n})
	}
	return out, nil
}

// Start stores what p's checks are sent and makes each planned result
// pending; the checks run in the background.
func (s *Service) Start(ctx context.Context, p Payload, plan []Planned) error {
	if len(plan) == 0 {
		return nil
	}
	if len(p.Changes) > MaxChanges {
		p.Changes, p.Truncated = p.Changes[:MaxChanges], true
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		if err := txn.Set(subjectKey(p.ProposalID), b); err != nil {
			return err
		}
		for _, pl := range plan {
			r := Result{Name: pl.Name, State: StatePending, Digest: p.DiffSHA256, Required: pl.Required}
			if err := putResult(txn, p.ProposalID, &r); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.wake()
	}
	return err
}

// Results returns the results of a proposal's checks, by name.
func (s *Service) Results(ctx context.Context, proposal string) ([]Result, error) {
	var out []Result
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix(resultPrefix(proposal)), func(_, v []byte) error {
			var res Result
			if json.Unmarshal(v, &res) == nil {
				out = append(out, res)
			}
			return nil
		})
	})
	return out, err
}

// wake tells Run to look for pending results now.
func (s *Service) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func putResult(txn kv.Txn, proposal string, r *Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := txn.Set(resultKey(proposal, r.Name), b); err != nil {
		return err
	}
	if r.State == StatePending {
		return txn.Set(pendingKey(proposal, r.Name), nil)
	}
	return txn.Delete(pendingKey(proposal, r.Name))
}

func getCheck(r kv.Reader, repo, name string) (*Check, error) {
	var c Check
	if err := getJSON(r, checkKey(repo, name), &c); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("no check %s in %s: %w", name, repo, ErrNotFound)
		}
		return nil, err
	}
	return &c, nil
}

// proposalOf is the proposal a pending key names.
func proposalOf(key []byte) (proposal, name string) {
	rest := strings.TrimPrefix(string(key), keyspace.CheckPending)
	proposal, name, _ = strings.Cut(rest, "/")
	return proposal, name
}
