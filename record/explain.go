package record

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentnas/nas/kv"
)

// Explanation answers "what may have influenced this commit?": the events
// that name the commit, the run and lease behind it (IDs as recorded), what
// that run did, the gate decisions involved and what the run read.
type Explanation struct {
	Repo   string `json:"repo,omitempty"`
	Commit string `json:"commit"`
	// Events are the events whose subject is the commit (the commit or
	// merge itself, gate decisions, branches created from it), in order.
	Events          []Event `json:"events"`
	EventsTruncated bool    `json:"events_truncated,omitempty"`
	// Origin is the Seq of the event that made the commit: the first
	// commit or merge event, else the first event naming it. The fields
	// below come from it.
	Origin     uint64 `json:"origin"`
	Run        string `json:"run,omitempty"`
	Lease      string `json:"lease,omitempty"`
	Principal  string `json:"principal,omitempty"`
	OnBehalfOf string `json:"on_behalf_of,omitempty"`
	Purpose    string `json:"purpose,omitempty"`
	// RunEvents are the run's events in order, at most
	// Options.ExplainEvents of RunEventsTotal.
	RunEvents          []Event `json:"run_events,omitempty"`
	RunEventsTotal     int     `json:"run_events_total"`
	RunEventsTruncated bool    `json:"run_events_truncated,omitempty"`
	// Gates are the gate requests and decisions of the run or about the
	// commit.
	Gates []Event `json:"gates,omitempty"`
	// LeaseEvents are the issue, narrowing and revocation of the lease.
	LeaseEvents []Event `json:"lease_events,omitempty"`
	// ReadManifest is the run's read manifest, when one was flushed.
	ReadManifest *ManifestExcerpt `json:"read_manifest,omitempty"`
	// Contributors are the other leases whose staged writes the commit
	// folded (its origin event's DetailStagedBy): a commit the owner or
	// an orchestrator made on a run's branch still names every run in it.
	Contributors []Contributor `json:"contributors,omitempty"`
}

// Contributor is a lease whose writes a commit holds, with what its run
// read and how the lease was issued.
type Contributor struct {
	Lease        string           `json:"lease"`
	Run          string           `json:"run"`
	LeaseEvents  []Event          `json:"lease_events,omitempty"`
	ReadManifest *ManifestExcerpt `json:"read_manifest,omitempty"`
}

// DetailStagedBy is the Details key of a commit event that lists the
// leases whose staged writes the commit folded: "LEASE:RUN" pairs
// separated by spaces.
const DetailStagedBy = "staged_by"

// ManifestExcerpt is a read manifest's summary and its first entries.
type ManifestExcerpt struct {
	ManifestSummary
	Reads     []Read `json:"reads"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Explain returns the Explanation of commit in repo. commit may be a
// unique prefix of a recorded commit ID; repo "" matches any repository.
// It returns an error wrapping ErrNoSuchCommit when no event names the
// commit, and ErrAmbiguousCommit when the prefix names several.
//
// Reads still buffered in Manifests are not included: flush the run first.
func (r *Recorder) Explain(ctx context.Context, repo, commit string) (*Explanation, error) {
	if commit == "" {
		return nil, fmt.Errorf("explain: empty commit: %w", ErrInvalid)
	}
	var x *Explanation
	err := r.db.View(ctx, func(rd kv.Reader) error {
		full, err := resolveCommit(ctx, rd, repo, commit)
		if err != nil {
			return err
		}
		x, err = r.explain(ctx, rd, repo, full)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("explain %s: %w", commit, err)
	}
	return x, nil
}

// resolveCommit returns the commit ID that commit names exactly or as a
// unique prefix among events of repo.
func resolveCommit(ctx context.Context, rd kv.Reader, repo, commit string) (string, error) {
	found := false
	err := list(ctx, rd, Filter{Commit: commit, Repo: repo, Limit: 1}, func(Event) error {
		found = true
		return nil
	})
	if err != nil || found {
		return commit, err
	}
	var matches []string
	err = rd.Scan(kv.Prefix(indexValuePrefix(indexCommit, commit)), func(k, _ []byte) error {
		f, val, seq, ok := parseIndexKey(k)
		if !ok || f != indexCommit || slices.Contains(matches, val) {
			return nil
		}
		if repo != "" {
			e, err := getEvent(rd, seq)
			if err != nil || e.Repo != repo {
				return nil // a broken entry is Verify's to report
			}
		}
		matches = append(matches, val)
		if len(matches) > 1 {
			return kv.ErrStop
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case len(matches) == 0:
		return "", ErrNoSuchCommit
	case len(matches) > 1:
		return "", fmt.Errorf("%s and %s: %w", matches[0], matches[1], ErrAmbiguousCommit)
	}
	return matches[0], nil
}

func isGate(k Kind) bool { return k == KindGateRequested || k == KindGateDecided }

func (r *Recorder) explain(ctx context.Context, rd kv.Reader, repo, commit string) (*Explanation, error) {
	limit := r.opts.ExplainEvents
	x := &Explanation{Repo: repo, Commit: commit}
	gates := map[uint64]bool{}
	addGate := func(e Event) {
		if isGate(e.Kind) && !gates[e.Seq] && len(x.Gates) < limit {
			gates[e.Seq] = true
			x.Gates = append(x.Gates, e)
		}
	}
	var origin *Event
	err := list(ctx, rd, Filter{Commit: commit, Repo: repo}, func(e Event) error {
		if origin == nil || (origin.Kind != KindCommit && origin.Kind != KindMerge &&
			(e.Kind == KindCommit || e.Kind == KindMerge)) {
			c := e
			origin = &c
		}
		addGate(e)
		if len(x.Events) == limit {
			x.EventsTruncated = true
			return nil
		}
		x.Events = append(x.Events, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if origin == nil {
		return nil, ErrNoSuchCommit
	}
	x.Origin, x.Run, x.Lease = origin.Seq, origin.Run, origin.Lease
	x.Principal, x.OnBehalfOf, x.Purpose = origin.Principal, origin.OnBehalfOf, origin.Purpose

	if x.Run != "" {
		err := list(ctx, rd, Filter{Run: x.Run}, func(e Event) error {
			x.RunEventsTotal++
			addGate(e)
			if len(x.RunEvents) == limit {
				x.RunEventsTruncated = true
				return nil
			}
			x.RunEvents = append(x.RunEvents, e)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(x.Gates, func(a, b Event) int { return cmp.Compare(a.Seq, b.Seq) })

	if x.Lease != "" {
		f := Filter{Lease: x.Lease, Limit: limit,
			Kinds: []Kind{KindLeaseIssued, KindLeaseNarrowed, KindLeaseRevoked}}
		err := list(ctx, rd, f, func(e Event) error {
			x.LeaseEvents = append(x.LeaseEvents, e)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	run, ok := ManifestRun(origin.ReadManifest)
	if !ok {
		run = x.Run
	}
	if run != "" {
		m, err := r.excerpt(ctx, rd, run)
		if err != nil {
			return nil, err
		}
		x.ReadManifest = m
	}
	return x, r.contributors(ctx, rd, x, origin)
}

// contributors adds the leases an origin event names as staged writers.
func (r *Recorder) contributors(ctx context.Context, rd kv.Reader, x *Explanation, origin *Event) error {
	for _, f := range strings.Fields(origin.Details[DetailStagedBy]) {
		id, run, ok := strings.Cut(f, ":")
		if !ok || id == x.Lease {
			continue
		}
		c := Contributor{Lease: id, Run: run}
		err := list(ctx, rd, Filter{Lease: id, Limit: r.opts.ExplainEvents,
			Kinds: []Kind{KindLeaseIssued, KindLeaseNarrowed, KindLeaseRevoked}}, func(e Event) error {
			c.LeaseEvents = append(c.LeaseEvents, e)
			return nil
		})
		if err != nil {
			return err
		}
		if c.ReadManifest, err = r.excerpt(ctx, rd, run); err != nil {
			return err
		}
		x.Contributors = append(x.Contributors, c)
	}
	return nil
}

// excerpt is a run's read manifest summary and first reads, nil when the
// run has none.
func (r *Recorder) excerpt(ctx context.Context, rd kv.Reader, run string) (*ManifestExcerpt, error) {
	s, err := readSummary(rd, run)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := &ManifestExcerpt{ManifestSummary: s, Reads: []Read{}}
	err = scanManifest(ctx, rd, run, func(rd Read) error {
		if len(m.Reads) == r.opts.ExplainReads {
			m.Truncated = true
			return ErrStop
		}
		m.Reads = append(m.Reads, rd)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
