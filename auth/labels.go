package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/label"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// Trust labels at the door. An entry's effective labels are its stored
// ones raised by the repository's label rules (a configuration document
// of the repository, "labels"). A lease never sees an entry above its
// sensitivity ceiling: for it the key does not exist. Every read a lease
// makes adds the entry's labels to its run's session taint, which only
// grows and is kept in kv (RT/), so every gateway and every later lease of
// the run sees it; each growth is recorded (session.tainted).

// labelsConfig names the repository document of label rules.
const labelsConfig = "labels"

// LabelRules returns repo's label rules, in the order they apply.
func (a *Authority) LabelRules(ctx context.Context, repo string) ([]label.Rule, error) {
	doc, err := a.branches.RepoConfig(ctx, repo, labelsConfig)
	if errors.Is(err, branch.ErrNoSuchConfig) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rules []label.Rule
	if err := json.Unmarshal(doc, &rules); err != nil {
		return nil, fmt.Errorf("label rules of %s: %w", repo, err)
	}
	return rules, nil
}

// SetLabelRules replaces repo's label rules (the caller checked that the
// owner asks).
func (a *Authority) SetLabelRules(ctx context.Context, repo string, rules []label.Rule) error {
	if len(rules) > label.MaxRules {
		return fmt.Errorf("%w: %d label rules (at most %d)", label.ErrInvalid, len(rules), label.MaxRules)
	}
	for _, r := range rules {
		if err := r.Validate(); err != nil {
			return err
		}
	}
	if len(rules) == 0 {
		return a.branches.DeleteRepoConfig(ctx, repo, labelsConfig)
	}
	doc, err := json.Marshal(rules)
	if err != nil {
		return err
	}
	return a.branches.SetRepoConfig(ctx, repo, labelsConfig, doc)
}

// Effective is the labels of e, the entry of key in repo, under the
// repository's rules (read once a request).
func (a *Authority) Effective(ctx context.Context, p *Principal, repo, key string, e *manifest.Entry) (label.Label, error) {
	rules, err := a.rulesOf(ctx, p, repo)
	if err != nil {
		return label.Label{}, err
	}
	var l label.Label
	switch {
	case e != nil && e.Label != nil:
		l = *e.Label
	case e != nil && e.Remote != nil:
		l.Origin = label.External // attached before labels existed: an import all the same
	}
	return label.Apply(l, key, rules), nil
}

// rulesOf is repo's rules, cached on the request.
func (a *Authority) rulesOf(ctx context.Context, p *Principal, repo string) ([]label.Rule, error) {
	if rs, ok := p.rules[repo]; ok {
		return rs, nil
	}
	rs, err := a.LabelRules(ctx, repo)
	if err != nil {
		return nil, err
	}
	if p.rules == nil {
		p.rules = map[string][]label.Rule{}
	}
	p.rules[repo] = rs
	return rs, nil
}

// Admits reports whether p's lease may know e exists: its effective
// sensitivity is within the lease's ceiling. The owner is admitted to
// everything. Listings and search leave out what it does not admit.
func (a *Authority) Admits(ctx context.Context, p *Principal, repo, key string, e *manifest.Entry) bool {
	if p.Lease == nil {
		return true
	}
	l, err := a.Effective(ctx, p, repo, key, e)
	return err == nil && !label.Above(l.Sensitivity, p.Lease.SensitivityMax)
}

// Ceiling refuses (recorded, as ErrNotFound) an entry above the lease's
// sensitivity ceiling, before anything about it (a precondition, a
// range, a tag) is answered: for the lease it does not exist.
func (a *Authority) Ceiling(ctx context.Context, p *Principal, t Target, e *manifest.Entry) error {
	if p.Lease == nil {
		return nil
	}
	t.Branch = p.Branch(t.Repo, t.Branch)
	_, err := a.ceiling(ctx, p, t, e)
	return err
}

// ceiling refuses (recorded, as NotFound) a read by a lease of an entry
// above its sensitivity ceiling, and returns the entry's labels.
func (a *Authority) ceiling(ctx context.Context, p *Principal, t Target, e *manifest.Entry) (label.Label, error) {
	l, err := a.Effective(ctx, p, t.Repo, t.Key, e)
	if err != nil {
		return l, err
	}
	if label.Above(l.Sensitivity, p.Lease.SensitivityMax) {
		v := lease.Verdict{Decision: lease.NotFound, Rule: fmt.Sprintf("sensitivity %s is above the lease's ceiling %s", l.Sensitivity,
			label.Label{Sensitivity: p.Lease.SensitivityMax}.Norm().Sensitivity)}
		return l, a.refuse(ctx, p, string(lease.Read), t, v, ErrNotFound)
	}
	return l, nil
}

// Taint is the session taint of p's run (clean for the owner).
func (a *Authority) Taint(ctx context.Context, p *Principal) (label.Taint, error) {
	if p.Lease == nil {
		return label.Taint{}, nil
	}
	return a.leases.RunTaint(ctx, p.Lease.Run)
}

// taint adds a read of content labelled l at t to the taint of p's run,
// recording each growth. A request that reads many entries (a search, a
// recall) looks the taint up once: what it already holds taints no more.
func (a *Authority) taint(ctx context.Context, p *Principal, t Target, l label.Label) {
	if p.taint != nil {
		if _, grown := p.taint.With(l); !grown {
			return
		}
	}
	tn, grown, err := a.leases.growTaint(context.WithoutCancel(ctx), p.Lease.Run, l)
	if err != nil {
		a.log.Error("session taint not kept", "run", p.Lease.Run, "err", err)
		return
	}
	p.taint = &tn
	if !grown || a.rec == nil {
		return
	}
	e := record.Event{Kind: record.KindSessionTainted, Subject: record.Subject{Path: recorded(t.Key)},
		Details: map[string]string{"origin": l.Origin, "sensitivity": l.Sensitivity, "taint": fmt.Sprint(tn.List())}}
	Provenance(&e, p)
	if _, err := a.rec.Append(context.WithoutCancel(ctx), e); err != nil {
		a.log.Error("flight recorder: taint not recorded", "err", err)
	}
}

// runTaintKey is where run's taint lives.
func runTaintKey(run string) []byte { return []byte(keyspace.RunTaint + run) }

// RunTaint is the session taint of run: clean when it has read nothing.
func (s *Leases) RunTaint(ctx context.Context, run string) (label.Taint, error) {
	var t label.Taint
	err := s.db.View(ctx, func(r kv.Reader) error {
		var err error
		t, err = readTaint(r, run)
		return err
	})
	return t, err
}

// growTaint adds content labelled l to run's taint in one transaction,
// so concurrent reads on several gateways only ever add.
func (s *Leases) growTaint(ctx context.Context, run string, l label.Label) (label.Taint, bool, error) {
	t, err := s.RunTaint(ctx, run)
	if _, grown := t.With(l); err != nil || !grown {
		return t, false, err // the common case: a read-only look
	}
	var grown bool
	err = s.db.Update(ctx, func(txn kv.Txn) error {
		old, err := readTaint(txn, run)
		if err != nil {
			return err
		}
		if t, grown = old.With(l); !grown {
			return nil
		}
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		return txn.Set(runTaintKey(run), b)
	})
	return t, grown, err
}

// readTaint reads run's taint in r.
func readTaint(r kv.Reader, run string) (label.Taint, error) {
	var t label.Taint
	v, err := r.Get(runTaintKey(run))
	if errors.Is(err, kv.ErrNotFound) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	return t, json.Unmarshal(v, &t)
}

// WriteLabel is the label of new content p writes: for a lease, its
// run's taint as label.Taint.Label gives it (agent, or external once the
// run read external content; the highest sensitivity it read); for the
// owner, asked (nil: the default, owner and private). Content the scanner
// found credentials in (secret) is secret whoever writes it.
func (a *Authority) WriteLabel(ctx context.Context, p *Principal, asked *label.Label, secret bool) (*label.Label, error) {
	l := asked
	if p.Lease != nil {
		t, err := a.Taint(ctx, p)
		if err != nil {
			return nil, err
		}
		w := t.Label()
		if asked != nil {
			w = label.Raise(w, asked.Origin, asked.Sensitivity) // a lease may raise, never lower
		}
		l = &w
	}
	if secret {
		s := label.Raise(label.Of(l), "", label.Secret)
		l = &s
	}
	return l, nil
}

// CopyLabel is the label of a server-side copy by p of src's entry e:
// the source's effective labels, joined with what a fresh write by p
// would carry (for a lease, whose taint the copy's read already grew).
func (a *Authority) CopyLabel(ctx context.Context, p *Principal, src Target, e *manifest.Entry) (*label.Label, error) {
	l, err := a.Effective(ctx, p, src.Repo, src.Key, e)
	if err != nil {
		return nil, err
	}
	w, err := a.WriteLabel(ctx, p, nil, false)
	switch {
	case err != nil || w == nil && l == (label.Label{}).Norm():
		return nil, err
	case w == nil:
		return &l, nil
	}
	j := label.Join(l, *w)
	return &j, nil
}

// PartsLabel is the label of an object completed from parts: l (what
// the completing write carries) joined with the stored label of every
// part that has one (a part copied from a labelled object, or one the
// scanner found credentials in), so a part's origin and sensitivity
// carry into the object. Nil when neither l nor any part has a label.
func PartsLabel(l *label.Label, parts ...*label.Label) *label.Label {
	for _, pl := range parts {
		if pl == nil {
			continue
		}
		j := *pl
		if l != nil {
			j = label.Join(*l, *pl)
		}
		l = &j
	}
	return l
}

// ListFilter is p.Filter(act) that also leaves out of repo's listings
// every entry above the lease's sensitivity ceiling (nil for the owner).
func (a *Authority) ListFilter(ctx context.Context, p *Principal, repo string, act lease.Action) *branch.Filter {
	f := p.Filter(act)
	if f != nil {
		f.Entry = func(key string, e *manifest.Entry) bool { return a.Admits(ctx, p, repo, key, e) }
	}
	return f
}

// DerivedLabel is the label of content p makes from srcs (a compose, a
// note resting on sources): the union of the sources' effective labels
// and of what a fresh write by p carries; nil when that is the default.
func (a *Authority) DerivedLabel(ctx context.Context, p *Principal, srcs ...Source) (*label.Label, error) {
	w, err := a.WriteLabel(ctx, p, nil, false)
	if err != nil {
		return nil, err
	}
	l := label.Of(w)
	for _, s := range srcs {
		sl, err := a.Effective(ctx, p, s.Repo, s.Key, s.Entry)
		if err != nil {
			return nil, err
		}
		l = label.Join(l, sl)
	}
	if w == nil && l == (label.Label{}).Norm() {
		return nil, nil
	}
	return &l, nil
}

// Retention is the retention class and key domain of p's write of key in
// repo that asks for class and domain (metadata of the request): the
// strictest of that and the repository's rules; a sensitive write
// without a domain is sealed under the repository's own. The key domain
// returned is the keyring's name of it (keyring.Scoped): a domain is the
// repository's, whatever its name.
func (a *Authority) Retention(ctx context.Context, p *Principal, repo, key, class, domain string) (string, string, error) {
	if err := label.ValidRetention(class, domain); err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	rules, err := a.rulesOf(ctx, p, repo)
	if err != nil {
		return "", "", err
	}
	class, domain = label.Retention(key, class, domain, rules)
	if class != label.Sensitive {
		return class, "", nil
	}
	if domain == "" {
		domain = repo
	}
	return class, keyring.Scoped(repo, domain), nil
}
