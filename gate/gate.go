package gate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/check"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/policy"
	"github.com/agentnas/nas/record"
)

// Errors.
var (
	// ErrNotFound is returned for an unknown proposal or gate.
	ErrNotFound = errors.New("gate: not found")
	// ErrDecided is returned when deciding a gate that is no longer pending.
	ErrDecided = errors.New("gate: already decided")
	// ErrVoid is returned when an approval no longer matches the diff: a
	// branch moved or the proposing lease was revoked after the card was
	// made. Nothing is merged.
	ErrVoid = errors.New("gate: approval void, the diff changed since the card was made")
	// ErrRefused is returned when the policy refuses a proposal.
	ErrRefused = errors.New("gate: refused by policy")
	// ErrNarrow is returned when a narrowed approval cannot be made: it
	// names a path that is not on the card, no path, or a gate that is
	// not a merge's. The gate stays pending.
	ErrNarrow = errors.New("gate: a narrowed approval must name paths of a merge's card")
	// ErrStaleCard is returned when a narrowed approval names another
	// digest than the card's: the approver looked at another diff. The
	// gate stays pending.
	ErrStaleCard = errors.New("gate: the approval names another digest than the card's")
)

// Recorder writes flight-recorder events.
type Recorder interface {
	Append(ctx context.Context, e record.Event) (record.Event, error)
	ManifestSummary(ctx context.Context, run string) (record.ManifestSummary, error)
}

// Service handles proposals and gates.
type Service struct {
	b      *branch.Service
	db     kv.DB
	leases *auth.Leases
	rec    Recorder
	checks Checker // nil: no pre-merge checks
	now    func() time.Time
	// decide serializes taking a gate out of pending (Decide, and Propose
	// superseding it), so two decisions cannot both pass the pending check
	// and the later overwrite what the first one merged: in this process,
	// or across gateways with locker (SetLocker).
	decide sync.Mutex
	locker branch.Locker
	// Timeout is how long a gate waits for a person before it is denied.
	Timeout time.Duration
	// OnOutcome, when set before use, is told each proposal's status
	// (event "proposal": merged, pending, refused, conflict, up_to_date)
	// and each decision's (event "decision": approved, denied, void), for
	// the gateway's metrics.
	OnOutcome func(event, status string)
}

// SetLocker makes decisions take l's lock, held in the metadata store,
// so gateways sharing it decide one at a time. Call it before serving.
func (s *Service) SetLocker(l branch.Locker) { s.locker = l }

// lockDecisions serializes taking gates out of pending.
func (s *Service) lockDecisions(ctx context.Context) (unlock func(), err error) {
	if s.locker != nil {
		return s.locker.Lock(ctx, "gate-decisions")
	}
	s.decide.Lock()
	return s.decide.Unlock, nil
}

// New returns a Service.
func New(b *branch.Service, db kv.DB, leases *auth.Leases, rec Recorder) *Service {
	return &Service{b: b, db: db, leases: leases, rec: rec, now: time.Now, Timeout: 24 * time.Hour}
}

// ChangeLine is one change of a proposal's diff.
type ChangeLine struct {
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	OldETag string `json:"old_etag,omitempty"`
	NewETag string `json:"new_etag,omitempty"`
	NewSize int64  `json:"new_size,omitempty"`
}

// Proposal is an Agent PR.
type Proposal struct {
	ID         string                  `json:"proposal_id"`
	Repo       string                  `json:"repo"`
	From       string                  `json:"from"`
	Into       string                  `json:"into"`
	SourceHead string                  `json:"source_head"`
	TargetHead string                  `json:"target_head"`
	Base       string                  `json:"base"`
	Intent     string                  `json:"intent,omitempty"`
	Run        string                  `json:"run,omitempty"`
	Lease      string                  `json:"lease,omitempty"`
	Principal  string                  `json:"principal"`
	Counts     map[string]int          `json:"counts"`
	Changes    []ChangeLine            `json:"changes"`
	Digest     string                  `json:"diff_sha256"`
	Reads      *record.ManifestSummary `json:"read_manifest,omitempty"`
	Taint      []string                `json:"session_taint,omitempty"`
	Egress     bool                    `json:"egress,omitempty"`
	// GuardReason says why the session invariant held or refused it.
	GuardReason string   `json:"guard_reason,omitempty"`
	Action      Action   `json:"decision"`
	Rule        string   `json:"rule"`
	Status      string   `json:"status"` // merged, pending, refused, conflict, up_to_date
	GateID      string   `json:"gate_id,omitempty"`
	Merge       string   `json:"merge_commit,omitempty"`
	Conflicts   []string `json:"conflicts,omitempty"`
	// Checks names the pre-merge checks the proposal runs (required by
	// its target or asked for); AutoMerge says the policy would merge it,
	// so it merges once every one of them passed.
	Checks    []string  `json:"checks,omitempty"`
	AutoMerge bool      `json:"auto_merge,omitempty"`
	Created   time.Time `json:"created"`
}

// Card is the specification's Gate Card, rendered by the gateway.
type Card struct {
	GateID string `json:"gate_id"`
	Run    string `json:"run"`
	Lease  string `json:"lease"`
	Action struct {
		Op           string       `json:"op"`
		From         string       `json:"from"`
		Into         string       `json:"into"`
		FilesChanged int          `json:"files_changed"`
		DiffSHA256   string       `json:"diff_sha256"`
		Changes      []ChangeLine `json:"changes"`
		// Requested and Until are what a request for wider authority
		// (Op OpWiden) would grant, and until when.
		Requested []lease.Rule `json:"requested,omitempty"`
		Until     time.Time    `json:"until,omitzero"`
		// Paths and Subject are what a request to forget (Op OpForget)
		// would forget.
		Paths   []string `json:"paths,omitempty"`
		Subject string   `json:"subject,omitempty"`
	} `json:"action"`
	Why  string `json:"why"`
	Risk struct {
		SessionTaint []string `json:"session_taint"`
		Sources      []string `json:"sources"`
		Destructive  bool     `json:"destructive"`
		Egress       bool     `json:"egress"`
		// Guard is why the session invariant sent the proposal here.
		Guard string `json:"guard,omitempty"`
	} `json:"risk"`
	ReadManifest *record.ManifestSummary `json:"read_manifest,omitempty"`
	// Checks are the proposal's pre-merge check results, as of reading
	// the gate.
	Checks    []check.Result `json:"checks,omitempty"`
	Options   []string       `json:"options"`
	Default   string         `json:"default"`
	ExpiresAt time.Time      `json:"expires_at"`
}

// Gate is a pending or decided gate.
type Gate struct {
	ID        string    `json:"gate_id"`
	Proposal  string    `json:"proposal_id"`
	Repo      string    `json:"repo"`
	Card      Card      `json:"card"`
	Status    string    `json:"status"` // pending, approved, denied, expired, void
	Created   time.Time `json:"created"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Merge     string    `json:"merge_commit,omitempty"`
	// Paths are the keys a narrowed approval merged (nil: the whole
	// card).
	Paths []string `json:"approved_paths,omitempty"`
	// Widen is the request for wider authority a gate without a proposal
	// holds.
	Widen *Widening `json:"widen,omitempty"`
	// Forget is the request to forget a gate without a proposal holds.
	Forget *ForgetAsk `json:"forget,omitempty"`
	// Push is the request to write back to a source a gate without a
	// proposal holds.
	Push *PushAsk `json:"push,omitempty"`
}

func newID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// digest hashes the diff together with both heads and the lease, so an
// approval cannot be replayed onto anything else.
func digest(repo, source, target, leaseID string, changes []ChangeLine) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field("agentnas merge digest v1")
	for _, s := range []string{repo, source, target, leaseID} {
		field(s)
	}
	for _, c := range changes {
		for _, s := range []string{c.Kind, c.Key, c.OldETag, c.NewETag} {
			field(s)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func lines(changes []branch.Change) ([]ChangeLine, map[string]int, bool) {
	out := make([]ChangeLine, 0, len(changes))
	counts := map[string]int{"added": 0, "modified": 0, "deleted": 0}
	deletes := false
	for _, c := range changes {
		l := ChangeLine{Kind: string(c.Kind), Key: c.Key}
		if c.Old != nil {
			l.OldETag = c.Old.ETag
		}
		if c.New != nil {
			l.NewETag, l.NewSize = c.New.ETag, c.New.Size
		}
		switch c.Kind {
		case branch.Added:
			counts["added"]++
		case branch.Modified:
			counts["modified"]++
		case branch.Deleted:
			counts["deleted"]++
			deletes = true
		}
		out = append(out, l)
	}
	return out, counts, deletes
}

// Destructive is the card's rule for risk.destructive: some line of
// changes deletes a key. A card shown with fewer lines (to a lease)
// applies it to the lines it shows.
func Destructive(changes []ChangeLine) bool {
	for _, l := range changes {
		if l.Kind == string(branch.Deleted) {
			return true
		}
	}
	return false
}

// ProposeRequest asks to merge From into Into.
type ProposeRequest struct {
	Repo, From, Into string
	Intent           string
	Lease            *lease.Lease // the proposing run; nil for the owner
	Actor            string       // the access key
	Taint            label.Taint  // the proposing run's session taint
	Checks           []string     // pre-merge checks asked for, besides those Into requires
}

// Propose commits the source's staged changes, computes the merge's real
// diff and digest, asks the policy, and merges, opens a gate or refuses.
func (s *Service) Propose(ctx context.Context, r ProposeRequest) (*Proposal, error) {
	p, err := s.propose(ctx, r)
	if err == nil && s.OnOutcome != nil {
		s.OnOutcome("proposal", p.Status)
	}
	return p, err
}

func (s *Service) propose(ctx context.Context, r ProposeRequest) (*Proposal, error) {
	co := branch.CommitOptions{Message: "propose: " + r.Intent, Principal: r.Actor}
	if l := r.Lease; l != nil {
		co.Principal, co.OnBehalfOf, co.Run, co.Lease = l.Principal, l.OnBehalfOf, l.Run, l.ID
	}
	co.Intent = func(id manifest.CommitID) error { return s.commitEvent(ctx, r, co, id) }
	if _, err := s.b.Commit(ctx, r.Repo, r.From, co); err != nil && !errors.Is(err, branch.ErrNothingToCommit) {
		return nil, err
	}
	res, err := s.b.Merge(ctx, r.Repo, r.From, r.Into, branch.MergeOptions{DryRun: true, AllowProtected: true})
	p := &Proposal{ID: newID("pr_"), Repo: r.Repo, From: r.From, Into: r.Into, Intent: r.Intent, Principal: r.Actor,
		Created: s.now().UTC(), Counts: map[string]int{}, Changes: []ChangeLine{}}
	if l := r.Lease; l != nil {
		p.Run, p.Lease, p.Principal = l.Run, l.ID, l.Principal
	}
	if res != nil {
		p.SourceHead, p.TargetHead, p.Base = res.Theirs.String(), res.Ours.String(), res.Base.String()
	}
	switch {
	case errors.Is(err, branch.ErrMergeConflict):
		p.Status = "conflict"
		for _, c := range res.Conflicts {
			p.Conflicts = append(p.Conflicts, c.Key)
		}
		return p, s.save(ctx, p, nil)
	case err != nil:
		return nil, err
	case res.UpToDate:
		p.Status = "up_to_date"
		return p, nil
	}
	var deletes bool
	p.Changes, p.Counts, deletes = lines(res.Changes)
	p.Digest = digest(r.Repo, p.SourceHead, p.TargetHead, p.Lease, p.Changes)
	unlock, err := s.lockDecisions(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Proposing again what already waits for a person returns that gate,
	// so an agent that retries learns it waits instead of queueing more; a
	// waiting gate for an older diff of the same branches is superseded.
	if waiting, err := s.waiting(ctx, p); err != nil || waiting != nil {
		return waiting, err
	}
	if p.Run != "" && s.rec != nil {
		if sum, err := s.rec.ManifestSummary(ctx, p.Run); err == nil {
			p.Reads = &sum
		}
	}
	plan, err := s.plan(ctx, r)
	if err != nil {
		return nil, err
	}
	if err := s.decideAction(ctx, r, p, deletes); err != nil {
		return nil, err
	}
	holdForChecks(p, plan)
	if p, err = s.act(ctx, p); err != nil {
		return nil, err
	}
	return p, s.startChecks(ctx, p, plan)
}

// decideAction sets p's action and rule from the repository's policy; a
// lease that does not grant propose can only ask, and one whose
// requires_gate names the merge (or, for a diff that deletes, the delete)
// sends it to a person whatever the policy says.
func (s *Service) decideAction(ctx context.Context, r ProposeRequest, p *Proposal, deletes bool) error {
	pol, err := s.Policy(ctx, r.Repo)
	if err != nil {
		return err
	}
	role := "owner"
	if r.Lease != nil {
		role = r.Lease.Role
	}
	keys := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		keys[i] = c.Key
	}
	p.Action, p.Rule = pol.Decide(policy.Facts{Role: role, Into: r.Into, Keys: keys, Deletes: deletes})
	if r.Lease != nil {
		p.Taint, p.Egress = r.Taint.List(), r.Lease.Egress
		if err := s.guard(ctx, r, p, pol.Guard); err != nil || p.Rule == policy.RuleOfTwo {
			return err
		}
	}
	if l := r.Lease; l != nil && p.Action == Merge {
		switch {
		case !l.AllowsAnywhere(lease.Propose, s.now()):
			p.Action, p.Rule = Hold, "the lease does not grant propose"
		case slices.Contains(l.RequiresGate, "merge"):
			p.Action, p.Rule = Hold, "the lease requires a gate for merge (requires_gate)"
		case deletes && slices.Contains(l.RequiresGate, "delete"):
			p.Action, p.Rule = Hold, "the lease requires a gate for deletes (requires_gate)"
		}
	}
	return nil
}

// act carries out p's action: refuse it, merge it, or open a gate.
func (s *Service) act(ctx context.Context, p *Proposal) (*Proposal, error) {
	switch p.Action {
	case Refuse:
		p.Status = "refused"
		if err := s.event(ctx, record.KindDenied, p, record.Decision{Effect: record.EffectDeny, Rule: p.Rule, Reason: p.GuardReason}, nil); err != nil {
			return nil, err
		}
		return p, s.save(ctx, p, nil)
	case Merge:
		if err := s.merge(ctx, p, "policy: "+p.Rule, false, nil); err != nil {
			return nil, err
		}
		return p, nil
	}
	g := &Gate{ID: newID("gt_"), Proposal: p.ID, Repo: p.Repo, Status: "pending", Created: p.Created}
	g.Card = s.card(p, g.ID)
	p.GateID, p.Status = g.ID, "pending"
	why := "waits for a person"
	if p.GuardReason != "" {
		why = p.GuardReason
	}
	if err := s.event(ctx, record.KindGateRequested, p, record.Decision{Rule: p.Rule, Reason: why},
		map[string]string{"gate": g.ID, "diff_sha256": p.Digest}); err != nil {
		return nil, err
	}
	return p, s.save(ctx, p, g)
}

// commitEvent records the commit a proposal makes of its branch's staged
// changes, naming every lease whose writes it folds.
func (s *Service) commitEvent(ctx context.Context, r ProposeRequest, co branch.CommitOptions, id manifest.CommitID) error {
	if s.rec == nil {
		return nil
	}
	e := record.Event{Kind: record.KindCommit, Run: co.Run, Lease: co.Lease, Principal: co.Principal, OnBehalfOf: co.OnBehalfOf,
		Repo: r.Repo, Branch: r.From, Subject: record.Subject{Commit: id.String()}, Details: map[string]string{"detail": co.Message}}
	if co.Run != "" {
		e.ReadManifest = record.ManifestID(co.Run)
	}
	if c, err := s.b.Manifest().GetCommit(ctx, id); err == nil {
		var parts []string
		for _, w := range branch.StagedBy(c) {
			parts = append(parts, w.Lease+":"+w.Run)
		}
		if len(parts) > 0 {
			e.Details[record.DetailStagedBy] = strings.Join(parts, " ")
		}
	}
	_, err := s.rec.Append(ctx, e)
	return err
}

// waiting returns the proposal of a pending gate for the same branches and
// diff as p, and voids pending gates for the same branches with another
// diff (their approval could no longer merge anyway).
func (s *Service) waiting(ctx context.Context, p *Proposal) (*Proposal, error) {
	gs, err := s.ListGates(ctx, "pending")
	if err != nil {
		return nil, err
	}
	for i := range gs {
		g := &gs[i]
		if g.Repo != p.Repo || g.Card.Action.From != p.From || g.Card.Action.Into != p.Into {
			continue
		}
		old, err := s.GetProposal(ctx, g.Proposal)
		if err != nil {
			return nil, err
		}
		if old.Digest == p.Digest {
			return old, nil
		}
		g.Status, g.DecidedAt, g.DecidedBy = "void", s.now().UTC(), "gateway"
		g.Reason = "superseded by proposal " + p.ID + ": the branch changed after the card was made"
		old.Status = "void"
		if err := s.event(ctx, record.KindGateDecided, old, record.Decision{Effect: record.EffectDeny, Rule: "superseded", Reason: g.Reason},
			map[string]string{"gate": g.ID, "diff_sha256": old.Digest}); err != nil {
			return nil, err
		}
		if err := s.save(ctx, old, g); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

func (s *Service) card(p *Proposal, id string) Card {
	var c Card
	c.GateID, c.Run, c.Lease = id, p.Run, p.Lease
	c.Action.Op, c.Action.From, c.Action.Into = "merge", p.From, p.Into
	c.Action.FilesChanged, c.Action.DiffSHA256, c.Action.Changes = len(p.Changes), p.Digest, p.Changes
	c.Why = p.Intent
	c.Risk.SessionTaint, c.Risk.Sources = append([]string{}, p.Taint...), []string{}
	c.Risk.Destructive, c.Risk.Egress, c.Risk.Guard = Destructive(p.Changes), p.Egress, p.GuardReason
	c.ReadManifest = p.Reads
	c.Options, c.Default = []string{"approve", "deny"}, "deny"
	c.ExpiresAt = p.Created.Add(s.Timeout)
	return c
}

// merge performs an approved proposal, bound to its heads; review marks
// what it merges reviewed (a person's approval, not a policy's); only,
// when not nil, narrows it to those keys.
func (s *Service) merge(ctx context.Context, p *Proposal, why string, review bool, only []string) error {
	src, err := manifest.ParseCommitID(p.SourceHead)
	if err != nil {
		return err
	}
	dst, err := manifest.ParseCommitID(p.TargetHead)
	if err != nil {
		return err
	}
	o := branch.MergeOptions{AllowProtected: true, ExpectSource: src, ExpectTarget: dst, Review: review, Only: only,
		CommitOptions: branch.CommitOptions{Message: fmt.Sprintf("merge %s into %s (%s)", p.From, p.Into, why), Principal: p.Principal, Run: p.Run, Lease: p.Lease,
			Extra: []manifest.Pair{{Name: "proposal", Value: p.ID}, {Name: "diff_sha256", Value: p.Digest}}}}
	details := map[string]string{"diff_sha256": p.Digest}
	if only != nil {
		n := fmt.Sprintf("%d of %d keys", len(only), len(p.Changes))
		o.Extra = append(o.Extra, manifest.Pair{Name: "narrowed", Value: n})
		details["narrowed"] = n
	}
	o.Intent = func(id manifest.CommitID) error {
		details["commit"] = id.String()
		return s.event(ctx, record.KindMerge, p, record.Decision{Effect: record.EffectAllow, Rule: p.Rule}, details)
	}
	res, err := s.b.Merge(ctx, p.Repo, p.From, p.Into, o)
	if errors.Is(err, branch.ErrConflict) {
		return fmt.Errorf("%w: %v", ErrVoid, err)
	}
	if err != nil {
		return err
	}
	p.Status, p.Merge = "merged", res.Commit.String()
	return s.save(ctx, p, nil)
}

func (s *Service) event(ctx context.Context, kind record.Kind, p *Proposal, d record.Decision, details map[string]string) error {
	if s.rec == nil {
		return nil
	}
	e := record.Event{Kind: kind, Run: p.Run, Lease: p.Lease, Principal: p.Principal, Repo: p.Repo, Branch: p.Into,
		Decision: d, Details: map[string]string{"proposal": p.ID, "from": p.From}}
	if p.Run != "" {
		e.ReadManifest = record.ManifestID(p.Run)
	}
	for k, v := range details {
		e.Details[k] = v
	}
	if c := details["commit"]; c != "" {
		e.Subject.Commit = c
	}
	_, err := s.rec.Append(ctx, e)
	return err
}

func (s *Service) save(ctx context.Context, p *Proposal, g *Gate) error {
	return s.db.Update(ctx, func(txn kv.Txn) error {
		b, _ := json.Marshal(p)
		if err := txn.Set([]byte(keyspace.Proposal+p.ID), b); err != nil {
			return err
		}
		if g != nil {
			gb, _ := json.Marshal(gateRecord{Gate: *g, SourceHead: p.SourceHead, TargetHead: p.TargetHead})
			return txn.Set([]byte(keyspace.Gate+g.ID), gb)
		}
		return nil
	})
}

type gateRecord struct {
	Gate
	SourceHead string `json:"source_head"`
	TargetHead string `json:"target_head"`
}

// GetProposal returns a proposal.
func (s *Service) GetProposal(ctx context.Context, id string) (*Proposal, error) {
	var p Proposal
	if err := s.get(ctx, keyspace.Proposal+id, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GetGate returns a gate, timing it out if its deadline passed.
func (s *Service) GetGate(ctx context.Context, id string) (*Gate, error) {
	var gr gateRecord
	if err := s.get(ctx, keyspace.Gate+id, &gr); err != nil {
		return nil, err
	}
	g := gr.Gate
	if g.Status == "pending" && s.now().After(g.Card.ExpiresAt) {
		g.Status, g.Reason = "expired", "timed out: the default is deny"
	}
	if g.Proposal != "" && s.checks != nil {
		p, err := s.GetProposal(ctx, g.Proposal)
		if err != nil {
			return nil, err
		}
		if g.Card.Checks, err = s.CardChecks(ctx, p); err != nil {
			return nil, err
		}
	}
	return &g, nil
}

func (s *Service) get(ctx context.Context, key string, v any) error {
	return s.db.View(ctx, func(r kv.Reader) error {
		b, err := r.Get([]byte(key))
		if errors.Is(err, kv.ErrNotFound) {
			return fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		if err != nil {
			return err
		}
		return json.Unmarshal(b, v)
	})
}

// ListGates returns gates, newest first; status "" lists all.
func (s *Service) ListGates(ctx context.Context, status string) ([]Gate, error) {
	var ids []string
	err := s.db.View(ctx, func(r kv.Reader) error {
		return r.Scan(kv.Prefix([]byte(keyspace.Gate)), func(k, _ []byte) error {
			ids = append(ids, string(k[3:]))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	var out []Gate
	for _, id := range ids {
		g, err := s.GetGate(ctx, id)
		if err != nil {
			return nil, err
		}
		if status == "" || g.Status == status {
			out = append(out, *g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Decide approves or denies a pending gate. An approval merges only if the
// diff is still the one on the card (same heads, lease not revoked);
// otherwise the gate becomes void and nothing merges.
func (s *Service) Decide(ctx context.Context, id, by string, approve bool, reason string) (*Gate, error) {
	return s.outcome(s.decideGate(ctx, id, by, approve, reason, nil))
}

// Narrowed is a person's approval of a merge's card under the card's
// digest Digest: of the keys Paths alone, each a key on the card, or of
// the whole card when Paths is empty.
type Narrowed struct {
	Digest string
	Paths  []string
}

// ApproveNarrowed approves n.Paths (all, when empty) of a pending merge
// gate: it is bound to the card's digest (n.Digest must be it, and the
// whole diff must still be the card's, else the gate is void as for
// Decide), and only the chosen keys merge. What was left out stays on the
// proposing branch.
func (s *Service) ApproveNarrowed(ctx context.Context, id, by string, n Narrowed, reason string) (*Gate, error) {
	return s.outcome(s.decideGate(ctx, id, by, true, reason, &n))
}

// outcome tells OnOutcome a decision's status.
func (s *Service) outcome(g *Gate, err error) (*Gate, error) {
	if (err == nil || errors.Is(err, ErrVoid)) && s.OnOutcome != nil {
		s.OnOutcome("decision", g.Status)
	}
	return g, err
}

func (s *Service) decideGate(ctx context.Context, id, by string, approve bool, reason string, n *Narrowed) (*Gate, error) {
	unlock, err := s.lockDecisions(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	g, err := s.GetGate(ctx, id)
	if err != nil {
		return nil, err
	}
	if g.Status != "pending" {
		return g, fmt.Errorf("gate %s is %s: %w", id, g.Status, ErrDecided)
	}
	if n != nil {
		if err := checkNarrowed(g, n); err != nil {
			return nil, err
		}
	}
	if g.Widen != nil {
		return s.decideWidening(ctx, g, by, approve, reason)
	}
	if g.Forget != nil {
		return s.decideForget(ctx, g, by, approve, reason)
	}
	if g.Push != nil {
		return s.decidePush(ctx, g, by, approve, reason)
	}
	p, err := s.GetProposal(ctx, g.Proposal)
	if err != nil {
		return nil, err
	}
	if approve {
		if err := s.checksPass(ctx, p, false); err != nil {
			return g, err // the gate stays pending
		}
	}
	g.DecidedAt, g.DecidedBy, g.Reason = s.now().UTC(), by, reason
	effect := record.EffectDeny
	if approve {
		effect = record.EffectAllow
		g.Status = "approved"
		if err := s.stillValid(ctx, p); err != nil {
			g.Status, g.Reason = "void", err.Error()
		}
	} else {
		g.Status = "denied"
	}
	if err := s.event(ctx, record.KindGateDecided, p, record.Decision{Effect: effect, Rule: "decided by " + by, Reason: g.Status},
		map[string]string{"gate": g.ID, "diff_sha256": p.Digest}); err != nil {
		return nil, err
	}
	if g.Status == "approved" {
		// A person approved this diff: what it merges is reviewed.
		var only []string
		if n != nil && len(n.Paths) > 0 {
			only, g.Paths = n.Paths, n.Paths
		}
		if err := s.merge(ctx, p, "approved by "+by, true, only); err != nil {
			if !errors.Is(err, ErrVoid) {
				return nil, err
			}
			g.Status, g.Reason = "void", err.Error()
		}
		g.Merge = p.Merge
	}
	p.Status = g.Status
	if g.Status == "approved" {
		p.Status = "merged"
	}
	if err := s.save(ctx, p, g); err != nil {
		return nil, err
	}
	if g.Status == "void" {
		return g, ErrVoid
	}
	return g, nil
}

// checkNarrowed refuses a narrowed approval that is not of a merge's
// card, names another digest, or names a key the card does not hold.
func checkNarrowed(g *Gate, n *Narrowed) error {
	if g.Widen != nil || g.Forget != nil || g.Push != nil || g.Proposal == "" {
		return fmt.Errorf("gate %s is not a merge's: %w", g.ID, ErrNarrow)
	}
	if n.Digest != g.Card.Action.DiffSHA256 {
		return ErrStaleCard
	}
	on := make(map[string]bool, len(g.Card.Action.Changes))
	for _, c := range g.Card.Action.Changes {
		on[c.Key] = true
	}
	for _, k := range n.Paths {
		if !on[k] {
			return fmt.Errorf("%q is not on the card: %w", k, ErrNarrow)
		}
	}
	return nil
}

// stillValid checks that the diff approved is the diff that would merge.
func (s *Service) stillValid(ctx context.Context, p *Proposal) error {
	if p.Lease != "" && s.leases != nil {
		if l, err := s.leases.Get(ctx, p.Lease); err == nil && l.Revoked {
			return fmt.Errorf("the proposing lease %s was revoked", p.Lease)
		}
	}
	res, err := s.b.Merge(ctx, p.Repo, p.From, p.Into, branch.MergeOptions{DryRun: true, AllowProtected: true})
	if err != nil {
		return err
	}
	changes, _, _ := lines(res.Changes)
	if d := digest(p.Repo, res.Theirs.String(), res.Ours.String(), p.Lease, changes); d != p.Digest {
		return fmt.Errorf("the diff changed since the card was made (digest %s, card %s)", d[:12], p.Digest[:12])
	}
	return nil
}

// Stats measures gate fatigue: approval rate and time to decide.
type Stats struct {
	Total, Pending, Approved, Denied, Expired, Void int
	ApprovalRate                                    float64 `json:"approval_rate"`
	MedianSecondsToDecide                           float64 `json:"median_seconds_to_decide"`
}

// GateStats computes Stats over every gate.
func (s *Service) GateStats(ctx context.Context) (*Stats, error) {
	gs, err := s.ListGates(ctx, "")
	if err != nil {
		return nil, err
	}
	st := &Stats{Total: len(gs)}
	var secs []float64
	for _, g := range gs {
		switch g.Status {
		case "pending":
			st.Pending++
		case "approved":
			st.Approved++
		case "denied":
			st.Denied++
		case "expired":
			st.Expired++
		case "void":
			st.Void++
		}
		if !g.DecidedAt.IsZero() {
			secs = append(secs, g.DecidedAt.Sub(g.Created).Seconds())
		}
	}
	if decided := st.Approved + st.Denied + st.Expired + st.Void; decided > 0 {
		st.ApprovalRate = float64(st.Approved) / float64(decided)
	}
	if len(secs) > 0 {
		slices.Sort(secs)
		st.MedianSecondsToDecide = secs[len(secs)/2]
	}
	return st, nil
}

// Policy returns a repository's policy (empty: every proposal is gated).
func (s *Service) Policy(ctx context.Context, repo string) (*Policy, error) {
	var p Policy
	err := s.get(ctx, keyspace.Policy+repo, &p)
	if errors.Is(err, ErrNotFound) {
		return &Policy{}, nil
	}
	return &p, err
}

// SetPolicy replaces a repository's policy.
func (s *Service) SetPolicy(ctx context.Context, repo string, p *Policy) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: %v", lease.ErrInvalid, err)
	}
	b, _ := json.Marshal(p)
	return s.db.Update(ctx, func(txn kv.Txn) error { return txn.Set([]byte(keyspace.Policy+repo), b) })
}
