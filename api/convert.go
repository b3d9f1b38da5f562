package api

import (
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas"
	"github.com/agentnas/nas/gate"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/policy"
	"github.com/agentnas/nas/record"
	"github.com/agentnas/nas/source"
)

// The translation of internal values into the contract's types: the one
// place where the control API's wire shapes are made.

func repoOut(r *branch.Repo) apiv1.Repo {
	return apiv1.Repo{Name: r.Name, DefaultBranch: r.DefaultBranch, Created: r.Created.UTC()}
}

func branchOut(b *branch.Branch) apiv1.Branch {
	j := apiv1.Branch{Repo: b.Repo, Name: b.Name, Head: b.Head.String(), Protected: b.Protected, Created: b.Created.UTC(),
		QuotaBytes: b.Limits.QuotaBytes, QuotaObjects: b.Limits.QuotaObjects}
	if !b.Base.IsZero() {
		j.Base = b.Base.String()
	}
	if t := b.Limits.ExpiresAt; !t.IsZero() {
		j.ExpiresAt = &t
	}
	return j
}

func commitOut(id manifest.CommitID, c *manifest.Commit) apiv1.Commit {
	j := apiv1.Commit{ID: id.String(), Parents: []string{}, Tree: c.Tree.String(), Message: c.Message, Principal: c.Principal,
		OnBehalfOf: c.OnBehalfOf, Run: c.Run, Lease: c.Lease, Time: time.Unix(0, c.Time).UTC()}
	for _, p := range c.Parents {
		j.Parents = append(j.Parents, p.String())
	}
	return j
}

func changeOut(c branch.Change) apiv1.Change {
	j := apiv1.Change{Kind: string(c.Kind), Key: c.Key}
	if c.Old != nil {
		j.OldETag, j.OldSize = c.Old.ETag, &c.Old.Size
	}
	if c.New != nil {
		j.NewETag, j.NewSize = c.New.ETag, &c.New.Size
	}
	return j
}

func objectOut(key string, e *manifest.Entry) apiv1.Object {
	j := apiv1.Object{Key: key, Size: e.Size, ETag: e.ETag, VersionID: e.VersionID,
		ModTime: time.Unix(0, e.ModTime).UTC(), ContentType: e.ContentType}
	for _, p := range e.Meta {
		if j.Meta == nil {
			j.Meta = map[string]string{}
		}
		j.Meta[p.Name] = p.Value
	}
	return j
}

// statOut describes e with its chunk map, as seen at commit head.
func statOut(key string, e *manifest.Entry, head string, c *manifest.Content) apiv1.Stat {
	st := apiv1.Stat{Object: objectOut(key, e), Commit: head, Chunks: []apiv1.Chunk{}}
	if c == nil {
		st.Lazy = true // not all local: read it by range, which fetches only what it touches
		return st
	}
	if c.Seal != nil {
		st.Sealed = true // its chunks hold sealed bytes: read it by range, never from a chunk cache
		return st
	}
	for _, r := range c.Chunks {
		st.Chunks = append(st.Chunks, apiv1.Chunk{Hash: r.Hash.String(), Size: r.Size})
	}
	return st
}

func mergeOut(r *branch.MergeResult) apiv1.MergeResult {
	if r == nil {
		return apiv1.MergeResult{}
	}
	m := apiv1.MergeResult{Base: r.Base.String(), Ours: r.Ours.String(), Theirs: r.Theirs.String(), Applied: r.Applied, UpToDate: r.UpToDate}
	if !r.Commit.IsZero() {
		m.Commit = r.Commit.String()
	}
	etag := func(e *manifest.Entry) *string {
		if e == nil {
			return nil
		}
		return &e.ETag
	}
	for _, c := range r.Conflicts {
		m.Conflicts = append(m.Conflicts, apiv1.Conflict{Key: c.Key, BaseETag: etag(c.Base), OursETag: etag(c.Ours), TheirsETag: etag(c.Theirs)})
	}
	for _, c := range r.Changes {
		m.Changes = append(m.Changes, changeOut(c))
	}
	return m
}

func linesOut(ls []gate.ChangeLine) []apiv1.ChangeLine {
	out := make([]apiv1.ChangeLine, 0, len(ls))
	for _, l := range ls {
		out = append(out, apiv1.ChangeLine(l))
	}
	return out
}

// gateLines is linesOut's inverse.
func gateLines(ls []apiv1.ChangeLine) []gate.ChangeLine {
	out := make([]gate.ChangeLine, 0, len(ls))
	for _, l := range ls {
		out = append(out, gate.ChangeLine(l))
	}
	return out
}

func proposalOut(p *gate.Proposal) apiv1.Proposal {
	return apiv1.Proposal{ID: p.ID, Repo: p.Repo, From: p.From, Into: p.Into, SourceHead: p.SourceHead, TargetHead: p.TargetHead,
		Base: p.Base, Intent: p.Intent, Run: p.Run, Lease: p.Lease, Principal: p.Principal, Counts: p.Counts,
		Changes: linesOut(p.Changes), Digest: p.Digest, Reads: summaryOut(p.Reads), Decision: string(p.Action), Rule: p.Rule,
		SessionTaint: p.Taint, GuardReason: p.GuardReason,
		Status: p.Status, GateID: p.GateID, Merge: p.Merge, Conflicts: p.Conflicts, Checks: p.Checks, Created: p.Created}
}

func gateOut(g *gate.Gate) apiv1.Gate {
	c := g.Card
	card := apiv1.Card{GateID: c.GateID, Run: c.Run, Lease: c.Lease, Why: c.Why, ReadManifest: summaryOut(c.ReadManifest),
		Options: c.Options, Default: c.Default, ExpiresAt: c.ExpiresAt, Checks: checkResultsOut(c.Checks),
		Action: apiv1.CardAction{Op: c.Action.Op, From: c.Action.From, Into: c.Action.Into, FilesChanged: c.Action.FilesChanged,
			DiffSHA256: c.Action.DiffSHA256, Changes: linesOut(c.Action.Changes), Requested: c.Action.Requested, Until: c.Action.Until,
			Paths: c.Action.Paths, Subject: c.Action.Subject},
		Risk: apiv1.CardRisk(c.Risk)}
	out := apiv1.Gate{ID: g.ID, Proposal: g.Proposal, Repo: g.Repo, Card: card, Status: g.Status, Created: g.Created,
		DecidedAt: g.DecidedAt, DecidedBy: g.DecidedBy, Reason: g.Reason, Merge: g.Merge, Paths: g.Paths}
	if g.Widen != nil {
		out.Grants = g.Widen.Grants
	}
	if g.Forget != nil {
		out.ForgetID = g.Forget.ForgetID
	}
	if p := g.Push; p != nil {
		out.Push = &apiv1.GatePush{Source: p.Source, From: p.From, Paths: p.Paths, Digest: p.Digest,
			Written: p.Written, Conflicts: p.Conflicts, Commit: p.Commit}
	}
	return out
}

func policyOut(p *gate.Policy) apiv1.Policy {
	out := apiv1.Policy{Rules: []apiv1.Rule{}}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, apiv1.Rule{Name: r.Name, Roles: r.Roles, Into: r.Into, MaxChanges: r.MaxChanges,
			Within: r.Within, Touches: r.Touches, Deletes: r.Deletes, Then: string(r.Then)})
	}
	if g := p.Guard; g != nil {
		out.Guard = &apiv1.Guard{OnWouldCompleteABC: string(g.OnWouldCompleteABC), Mode: g.Mode, SensitiveAt: g.SensitiveAt}
	}
	return out
}

func policyIn(p apiv1.Policy) *gate.Policy {
	out := &gate.Policy{}
	for _, r := range p.Rules {
		out.Rules = append(out.Rules, gate.Rule{Name: r.Name, Roles: r.Roles, Into: r.Into, MaxChanges: r.MaxChanges,
			Within: r.Within, Touches: r.Touches, Deletes: r.Deletes, Then: gate.Action(r.Then)})
	}
	if g := p.Guard; g != nil {
		out.Guard = &policy.Guard{OnWouldCompleteABC: policy.Action(g.OnWouldCompleteABC), Mode: g.Mode, SensitiveAt: g.SensitiveAt}
	}
	return out
}

func summaryOut(s *record.ManifestSummary) *apiv1.ManifestSummary {
	if s == nil {
		return nil
	}
	return &apiv1.ManifestSummary{ID: s.ID, Run: s.Run, Pages: s.Pages, Entries: s.Entries, Bytes: s.Bytes,
		First: s.First, Last: s.Last, Hash: s.Hash.String()}
}

func eventOut(e record.Event) apiv1.Event {
	return apiv1.Event{Seq: e.Seq, Time: e.Time, Kind: string(e.Kind), Run: e.Run, Principal: e.Principal, OnBehalfOf: e.OnBehalfOf,
		Lease: e.Lease, Purpose: e.Purpose, Repo: e.Repo, Branch: e.Branch, Subject: apiv1.Subject(e.Subject),
		Decision:     apiv1.Decision{Effect: string(e.Decision.Effect), Rule: e.Decision.Rule, Reason: e.Decision.Reason},
		ReadManifest: e.ReadManifest, Details: e.Details, PrevHash: e.PrevHash.String(), Hash: e.Hash.String()}
}

func eventsOut(es []record.Event) []apiv1.Event {
	if es == nil {
		return nil
	}
	out := make([]apiv1.Event, 0, len(es))
	for _, e := range es {
		out = append(out, eventOut(e))
	}
	return out
}

func readOut(r record.Read) apiv1.Read { return apiv1.Read(r) }

func explanationOut(x *record.Explanation) apiv1.Explanation {
	out := apiv1.Explanation{Repo: x.Repo, Commit: x.Commit, Events: eventsOut(x.Events), EventsTruncated: x.EventsTruncated,
		Origin: x.Origin, Run: x.Run, Lease: x.Lease, Principal: x.Principal, OnBehalfOf: x.OnBehalfOf, Purpose: x.Purpose,
		RunEvents: eventsOut(x.RunEvents), RunEventsTotal: x.RunEventsTotal, RunEventsTruncated: x.RunEventsTruncated,
		Gates: eventsOut(x.Gates), LeaseEvents: eventsOut(x.LeaseEvents)}
	if out.Events == nil {
		out.Events = []apiv1.Event{}
	}
	out.ReadManifest = excerptOut(x.ReadManifest)
	for _, c := range x.Contributors {
		out.Contributors = append(out.Contributors, apiv1.Contributor{Lease: c.Lease, Run: c.Run,
			LeaseEvents: eventsOut(c.LeaseEvents), ReadManifest: excerptOut(c.ReadManifest)})
	}
	return out
}

func excerptOut(m *record.ManifestExcerpt) *apiv1.ManifestExcerpt {
	if m == nil {
		return nil
	}
	ex := &apiv1.ManifestExcerpt{ManifestSummary: *summaryOut(&m.ManifestSummary), Reads: []apiv1.Read{}, Truncated: m.Truncated}
	for _, r := range m.Reads {
		ex.Reads = append(ex.Reads, readOut(r))
	}
	return ex
}

func verifyOut(r record.VerifyReport) apiv1.VerifyReport {
	return apiv1.VerifyReport{Records: r.Records, Head: apiv1.ChainHead{Seq: r.Head.Seq, Hash: r.Head.Hash.String(), Time: r.Head.Time},
		LastHash: r.LastHash.String(), IndexEntries: r.IndexEntries, Manifests: r.Manifests, ManifestPages: r.ManifestPages, Problems: r.Problems}
}

func problemOut(p record.Problem) apiv1.Problem {
	return apiv1.Problem{Kind: string(p.Kind), Seq: p.Seq, Key: p.Key, Detail: p.Detail}
}

func checkpointOut(c *branch.Checkpoint) apiv1.Checkpoint {
	return apiv1.Checkpoint{Branch: c.Branch, Name: c.Name, Commit: c.CommitH, Created: c.Created, By: c.By}
}

func trashOut(t *branch.TrashEntry) apiv1.TrashEntry {
	return apiv1.TrashEntry{Repo: t.Repo, Branch: t.Branch, Key: t.Key, DeletedAt: t.DeletedAt, Commit: t.Commit, ETag: t.ETag, Size: t.Size}
}

func fsckOut(r *branch.CheckReport) apiv1.FsckReport {
	out := apiv1.FsckReport{Repos: r.Repos, Branches: r.Branches, Commits: r.Commits, Entries: r.Entries, Lazy: r.Lazy,
		Chunks: chunkStatsOut(r.Chunks), Problems: r.Problems}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	return out
}

func chunkStatsOut(s cas.Stats) apiv1.ChunkStats {
	return apiv1.ChunkStats{Chunks: s.Chunks, Bytes: s.Bytes, InlineChunks: s.InlineChunks, Segments: s.Segments, SegmentBytes: s.SegmentBytes}
}

func gcOut(s branch.GCStats) apiv1.GCStats {
	return apiv1.GCStats{Commits: s.Commits, ExpiredCommits: s.ExpiredCommits, Versions: s.Versions, Uploads: s.Uploads,
		DeletedBranches: s.DeletedBranches, Trash: s.Trash, Nodes: s.Nodes, Contents: s.Contents, Chunks: apiv1.SweepStats(s.Chunks)}
}

func sourceOut(i *source.Info) apiv1.Source {
	return apiv1.Source{ID: i.ID, Repo: i.Repo, Branch: i.Branch, Prefix: i.Prefix, URL: i.URL, Endpoint: i.Endpoint,
		Region: i.Region, Versioned: i.Versioned, Credentials: i.Credentials, WithMetadata: i.WithMetadata, Args: i.Args, State: i.State, Error: i.Error,
		Listed: i.Listed, Added: i.Added, Changed: i.Changed, Removed: i.Removed, Kept: i.Kept, Skipped: i.Skipped,
		Base: i.Base, Commit: i.Commit, Commits: i.Commits, Created: i.Created, Synced: i.Synced, AttachedBy: i.Principal}
}
