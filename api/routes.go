package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentnas/nas/auth"
	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/manifest"
	"github.com/agentnas/nas/record"
)

// RepoJSON describes a repository.
type RepoJSON struct {
	Name          string    `json:"name"`
	DefaultBranch string    `json:"default_branch"`
	Created       time.Time `json:"created"`
}

// BranchJSON describes a branch.
type BranchJSON struct {
	Repo         string     `json:"repo"`
	Name         string     `json:"name"`
	Head         string     `json:"head"`
	Base         string     `json:"base,omitempty"`
	Protected    bool       `json:"protected"`
	Created      time.Time  `json:"created"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	QuotaBytes   int64      `json:"quota_bytes,omitempty"`
	QuotaObjects int64      `json:"quota_objects,omitempty"`
	// Usage is reported for branches with a quota (branch/get).
	Usage *UsageJSON `json:"usage,omitempty"`
}

// UsageJSON is what a branch's current objects add up to.
type UsageJSON struct {
	Bytes   int64 `json:"bytes"`
	Objects int64 `json:"objects"`
}

// CommitJSON describes a commit.
type CommitJSON struct {
	ID         string    `json:"id"`
	Parents    []string  `json:"parents"`
	Tree       string    `json:"tree"`
	Message    string    `json:"message"`
	Principal  string    `json:"principal,omitempty"`
	OnBehalfOf string    `json:"on_behalf_of,omitempty"`
	Run        string    `json:"run,omitempty"`
	Lease      string    `json:"lease,omitempty"`
	Time       time.Time `json:"time"`
}

// ChangeJSON is one A/M/D line of a diff.
type ChangeJSON struct {
	Kind    string `json:"kind"`
	Key     string `json:"key"`
	OldETag string `json:"old_etag,omitempty"`
	NewETag string `json:"new_etag,omitempty"`
	OldSize *int64 `json:"old_size,omitempty"`
	NewSize *int64 `json:"new_size,omitempty"`
}

func repoJSON(r *branch.Repo) RepoJSON {
	return RepoJSON{Name: r.Name, DefaultBranch: r.DefaultBranch, Created: r.Created.UTC()}
}

func branchJSON(b *branch.Branch) BranchJSON {
	j := BranchJSON{Repo: b.Repo, Name: b.Name, Head: b.Head.String(), Protected: b.Protected, Created: b.Created.UTC(),
		QuotaBytes: b.Limits.QuotaBytes, QuotaObjects: b.Limits.QuotaObjects}
	if !b.Base.IsZero() {
		j.Base = b.Base.String()
	}
	if t := b.Limits.ExpiresAt; !t.IsZero() {
		j.ExpiresAt = &t
	}
	return j
}

func commitJSON(id manifest.CommitID, c *manifest.Commit) CommitJSON {
	j := CommitJSON{ID: id.String(), Parents: []string{}, Tree: c.Tree.String(), Message: c.Message, Principal: c.Principal,
		OnBehalfOf: c.OnBehalfOf, Run: c.Run, Lease: c.Lease, Time: time.Unix(0, c.Time).UTC()}
	for _, p := range c.Parents {
		j.Parents = append(j.Parents, p.String())
	}
	return j
}

func changeJSON(c branch.Change) ChangeJSON {
	j := ChangeJSON{Kind: string(c.Kind), Key: c.Key}
	if c.Old != nil {
		j.OldETag, j.OldSize = c.Old.ETag, &c.Old.Size
	}
	if c.New != nil {
		j.NewETag, j.NewSize = c.New.ETag, &c.New.Size
	}
	return j
}

// list limits.
const (
	defaultLimit = 1000
	maxLimit     = 10000
)

func limitOf(n int) (int, error) {
	switch {
	case n == 0:
		return defaultLimit, nil
	case n < 0:
		return 0, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "limit must be positive"}
	}
	return min(n, maxLimit), nil
}

func required(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			return &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: fields[i] + " is required"}
		}
	}
	return nil
}

func (h *Handler) routes() map[string]verb {
	m := map[string]verb{
		"repo/create":        {write: true, fn: h.repoCreate},
		"repo/get":           {fn: h.repoGet},
		"repo/list":          {fn: h.repoList},
		"repo/delete":        {write: true, fn: h.repoDelete},
		"branch/create":      {write: true, fn: h.branchCreate},
		"branch/get":         {fn: h.branchGet},
		"branch/list":        {fn: h.branchList},
		"branch/delete":      {write: true, fn: h.branchDelete},
		"branch/protect":     {write: true, fn: h.branchProtect(true)},
		"branch/unprotect":   {write: true, fn: h.branchProtect(false)},
		"branch/limits":      {write: true, fn: h.branchLimits},
		"commit/create":      {write: true, lease: true, fn: h.commitCreate},
		"commit/log":         {lease: true, fn: h.commitLog},
		"diff/list":          {lease: true, fn: h.diffList},
		"changes/list":       {lease: true, fn: h.changesList},
		"admin/fsck":         {fn: h.fsck},
		"admin/gc":           {write: true, fn: h.gc},
		"lease/create":       {write: true, lease: true, fn: h.leaseCreate},
		"lease/get":          {lease: true, fn: h.leaseGet},
		"lease/list":         {fn: h.leaseList},
		"lease/revoke":       {write: true, lease: true, fn: h.leaseRevoke},
		"share/grant":        {write: true, fn: h.shareGrant},
		"share/list":         {fn: h.shareList},
		"share/revoke":       {write: true, fn: h.shareRevoke},
		"role/put":           {write: true, fn: h.rolePut},
		"role/get":           {fn: h.roleGet},
		"role/list":          {fn: h.roleList},
		"role/delete":        {write: true, fn: h.roleDelete},
		"record/list":        {fn: h.recordList},
		"record/explain":     {fn: h.recordExplain},
		"record/verify":      {fn: h.recordVerify},
		"object/stat":        {lease: true, fn: h.objectStat},
		"object/list":        {lease: true, fn: h.objectList},
		"object/lookup":      {lease: true, fn: h.objectLookup},
		"object/reads":       {lease: true, fn: h.objectReads},
		"object/compose":     {write: true, lease: true, fn: h.objectCompose},
		"object/rename":      {write: true, lease: true, fn: h.objectRename},
		"merge/create":       {write: true, fn: h.mergeCreate},
		"propose/create":     {write: true, lease: true, fn: h.proposeCreate},
		"gate/list":          {lease: true, fn: h.gateList},
		"gate/get":           {fn: h.gateGet},
		"gate/approve":       {write: true, fn: h.gateDecide(true)},
		"gate/deny":          {write: true, fn: h.gateDecide(false)},
		"gate/stats":         {fn: h.gateStats},
		"policy/get":         {fn: h.policyGet},
		"policy/set":         {write: true, fn: h.policySet},
		"checkpoint/create":  {write: true, fn: h.checkpointCreate},
		"checkpoint/list":    {fn: h.checkpointList},
		"checkpoint/restore": {write: true, fn: h.checkpointRestore},
		"trash/list":         {fn: h.trashList},
		"trash/restore":      {write: true, fn: h.trashRestore},
	}
	for name, v := range h.sourceRoutes() {
		m[name] = v
	}
	return m
}

func (h *Handler) repoCreate(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo      string `json:"repo"`
		Protected *bool  `json:"protected"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo); err != nil {
		return nil, err
	}
	protected := a.Protected == nil || *a.Protected
	r, err := h.b.CreateRepo(ctx, a.Repo, branch.CreateRepoOptions{Protected: protected, Principal: c.p.AccessKey})
	if err != nil {
		return nil, err
	}
	return map[string]any{"repo": repoJSON(r)}, nil
}

type repoArg struct {
	Repo string `json:"repo"`
}

func (h *Handler) repoGet(ctx context.Context, c *call) (any, error) {
	var a repoArg
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	r, err := h.b.GetRepo(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	return map[string]any{"repo": repoJSON(r)}, nil
}

func (h *Handler) repoList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	repos, err := h.b.ListRepos(ctx)
	if err != nil {
		return nil, err
	}
	out, next := pageOf(repos, a.Cursor, limit, func(r *branch.Repo) string { return r.Name }, repoJSON)
	return map[string]any{"repos": out, "next_cursor": next}, nil
}

func (h *Handler) repoDelete(ctx context.Context, c *call) (any, error) {
	var a repoArg
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := h.b.DeleteRepo(ctx, a.Repo); err != nil {
		return nil, err
	}
	return map[string]any{"deleted": a.Repo}, nil
}

type branchArg struct {
	Repo string `json:"repo"`
	Name string `json:"name"`
}

func (h *Handler) branchCreate(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo string `json:"repo"`
		Name string `json:"name"`
		From string `json:"from"`
		limitArgs
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	u, err := a.limitArgs.update(time.Now())
	if err != nil {
		return nil, err
	}
	var lim branch.Limits
	if u.ExpiresAt != nil {
		lim.ExpiresAt = *u.ExpiresAt
	}
	if u.QuotaBytes != nil {
		lim.QuotaBytes = *u.QuotaBytes
	}
	if u.QuotaObjects != nil {
		lim.QuotaObjects = *u.QuotaObjects
	}
	if err := h.record(ctx, c, record.Event{Kind: record.KindBranchCreated, Repo: a.Repo, Branch: a.Name, Details: detail("from " + a.From + a.limitArgs.describe())}); err != nil {
		return nil, err
	}
	b, err := h.b.CreateBranchWith(ctx, a.Repo, a.Name, a.From, lim)
	if err != nil {
		return nil, err
	}
	return map[string]any{"branch": branchJSON(b)}, nil
}

// limitArgs are a branch's time to live and quotas as the API takes them:
// ttl is a Go duration from now ("0" removes it); a quota of 0 removes it.
type limitArgs struct {
	TTL          *string `json:"ttl"`
	QuotaBytes   *int64  `json:"quota_bytes"`
	QuotaObjects *int64  `json:"quota_objects"`
}

func (a limitArgs) update(now time.Time) (branch.LimitsUpdate, error) {
	u := branch.LimitsUpdate{QuotaBytes: a.QuotaBytes, QuotaObjects: a.QuotaObjects}
	if a.TTL != nil {
		d, err := time.ParseDuration(*a.TTL)
		if err != nil || d < 0 {
			return u, &Error{Status: http.StatusBadRequest, Code: "InvalidArgument", Message: "ttl: want a duration such as 72h (0 removes it)"}
		}
		var t time.Time
		if d > 0 {
			t = now.Add(d).UTC()
		}
		u.ExpiresAt = &t
	}
	return u, nil
}

func (a limitArgs) describe() string {
	var s string
	if a.TTL != nil {
		s += ", ttl " + *a.TTL
	}
	if a.QuotaBytes != nil {
		s += fmt.Sprintf(", quota %d bytes", *a.QuotaBytes)
	}
	if a.QuotaObjects != nil {
		s += fmt.Sprintf(", quota %d objects", *a.QuotaObjects)
	}
	return s
}

// branchLimits changes a branch's time to live and quotas.
func (h *Handler) branchLimits(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo string `json:"repo"`
		Name string `json:"name"`
		limitArgs
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "name", a.Name); err != nil {
		return nil, err
	}
	u, err := a.limitArgs.update(time.Now())
	if err != nil {
		return nil, err
	}
	if err := h.record(ctx, c, record.Event{Kind: record.KindBranchLimits, Repo: a.Repo, Branch: a.Name, Details: detail(strings.TrimPrefix(a.limitArgs.describe(), ", "))}); err != nil {
		return nil, err
	}
	b, err := h.b.SetLimits(ctx, a.Repo, a.Name, u)
	if err != nil {
		return nil, err
	}
	return h.branchAnswer(ctx, b)
}

func (h *Handler) branchGet(ctx context.Context, c *call) (any, error) {
	var a branchArg
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	b, err := h.b.GetBranch(ctx, a.Repo, a.Name)
	if err != nil {
		return nil, err
	}
	return h.branchAnswer(ctx, b)
}

// branchAnswer describes a branch, with its usage when it has a quota.
func (h *Handler) branchAnswer(ctx context.Context, b *branch.Branch) (any, error) {
	j := branchJSON(b)
	if b.Limits.QuotaBytes > 0 || b.Limits.QuotaObjects > 0 {
		u, err := h.b.Usage(ctx, b.Repo, b.Name)
		if err != nil {
			return nil, err
		}
		j.Usage = &UsageJSON{Bytes: u.Bytes, Objects: u.Objects}
	}
	return map[string]any{"branch": j}, nil
}

func (h *Handler) branchList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	bs, err := h.b.ListBranches(ctx, a.Repo)
	if err != nil {
		return nil, err
	}
	out, next := pageOf(bs, a.Cursor, limit, func(b *branch.Branch) string { return b.Name }, branchJSON)
	return map[string]any{"branches": out, "next_cursor": next}, nil
}

func (h *Handler) branchDelete(ctx context.Context, c *call) (any, error) {
	var a branchArg
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := h.record(ctx, c, record.Event{Kind: record.KindBranchDeleted, Repo: a.Repo, Branch: a.Name}); err != nil {
		return nil, err
	}
	if err := h.b.DeleteBranch(ctx, a.Repo, a.Name); err != nil {
		return nil, err
	}
	return map[string]any{"deleted": a.Name}, nil
}

func (h *Handler) branchProtect(on bool) func(context.Context, *call) (any, error) {
	return func(ctx context.Context, c *call) (any, error) {
		var a branchArg
		if err := c.decode(&a); err != nil {
			return nil, err
		}
		kind := record.KindBranchUnprotected
		if on {
			kind = record.KindBranchProtected
		}
		if err := h.record(ctx, c, record.Event{Kind: kind, Repo: a.Repo, Branch: a.Name}); err != nil {
			return nil, err
		}
		if err := h.b.SetProtected(ctx, a.Repo, a.Name, on); err != nil {
			return nil, err
		}
		b, err := h.b.GetBranch(ctx, a.Repo, a.Name)
		if err != nil {
			return nil, err
		}
		return map[string]any{"branch": branchJSON(b)}, nil
	}
}

func (h *Handler) commitCreate(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo       string `json:"repo"`
		Branch     string `json:"branch"`
		Message    string `json:"message"`
		AllowEmpty bool   `json:"allow_empty"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "branch", a.Branch); err != nil {
		return nil, err
	}
	o := branch.CommitOptions{Message: a.Message, Principal: c.p.AccessKey, AllowEmpty: a.AllowEmpty}
	if err := h.auth.Authorize(ctx, c.p, lease.Write, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	if l := c.p.Lease; l != nil {
		o.Principal, o.OnBehalfOf, o.Run, o.Lease = l.Principal, l.OnBehalfOf, l.Run, l.ID
		if l.Purpose != "" {
			o.Extra = []manifest.Pair{{Name: "purpose", Value: l.Purpose}}
		}
	}
	o.Intent = func(id manifest.CommitID) error {
		return h.record(ctx, c, record.Event{Kind: record.KindCommit, Repo: a.Repo, Branch: a.Branch, Subject: record.Subject{Commit: id.String()}, Details: detail(a.Message)})
	}
	id, err := h.b.Commit(ctx, a.Repo, a.Branch, o)
	if err != nil {
		return nil, err
	}
	cm, err := h.b.Manifest().GetCommit(ctx, id)
	if err != nil {
		return nil, err
	}
	return map[string]any{"commit": commitJSON(id, cm)}, nil
}

func (h *Handler) commitLog(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		Ref    string `json:"ref"`
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "ref", a.Ref); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	if err := h.leaseRef(ctx, c, a.Repo, a.Ref); err != nil {
		return nil, err
	}
	ref := a.Ref
	if a.Cursor != "" {
		if err := h.leaseRef(ctx, c, a.Repo, a.Cursor); err != nil {
			return nil, err
		}
		ref = a.Cursor
	}
	out := []CommitJSON{}
	next := ""
	err = h.b.Log(ctx, a.Repo, ref, func(e branch.LogEntry) error {
		if len(out) == limit {
			next = e.ID.String()
			return kv.ErrStop
		}
		out = append(out, visibleCommit(c, commitJSON(e.ID, e.Commit)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"commits": out, "next_cursor": next}, nil
}

// pageOf returns up to limit items named after cursor, in order, and the
// cursor of the next page ("" when this is the last).
func pageOf[T, J any](items []T, cursor string, limit int, name func(*T) string, toJSON func(*T) J) ([]J, string) {
	out := []J{}
	for i := range items {
		n := name(&items[i])
		if n <= cursor {
			continue
		}
		if len(out) == limit {
			return out, name(&items[i-1])
		}
		out = append(out, toJSON(&items[i]))
	}
	return out, ""
}

// errPageFull ends a streamed page.
var errPageFull = errors.New("page full")

// page collects changes until limit, returning the cursor to continue.
func page(limit int, run func(fn func(branch.Change) error) error) ([]ChangeJSON, string, error) {
	out := []ChangeJSON{}
	next := ""
	err := run(func(c branch.Change) error {
		if len(out) == limit {
			next = out[len(out)-1].Key
			return errPageFull
		}
		out = append(out, changeJSON(c))
		return nil
	})
	if errors.Is(err, errPageFull) {
		err = nil
	}
	return out, next, err
}

func (h *Handler) diffList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		From   string `json:"from"`
		To     string `json:"to"`
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "from", a.From, "to", a.To); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	for _, ref := range []string{a.From, a.To} {
		if err := h.leaseRef(ctx, c, a.Repo, ref); err != nil {
			return nil, err
		}
	}
	changes, next, err := page(limit, func(fn func(branch.Change) error) error {
		return h.b.Diff(ctx, a.Repo, a.From, a.To, a.Cursor, c.p.Filter(lease.List), fn)
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"changes": changes, "next_cursor": next}, nil
}

func (h *Handler) changesList(ctx context.Context, c *call) (any, error) {
	var a struct {
		Repo   string `json:"repo"`
		Branch string `json:"branch"`
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	if err := required("repo", a.Repo, "branch", a.Branch); err != nil {
		return nil, err
	}
	limit, err := limitOf(a.Limit)
	if err != nil {
		return nil, err
	}
	if err := h.auth.Authorize(ctx, c.p, lease.List, auth.Target{Repo: a.Repo, Branch: a.Branch}); err != nil {
		return nil, err
	}
	changes, next, err := page(limit, func(fn func(branch.Change) error) error {
		return h.b.Changes(ctx, a.Repo, a.Branch, a.Cursor, visibleOnly(c, fn))
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"changes": changes, "next_cursor": next}, nil
}

func (h *Handler) fsck(ctx context.Context, c *call) (any, error) {
	if err := c.decode(&struct{}{}); err != nil {
		return nil, err
	}
	rep, err := h.b.Check(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"report": rep, "ok": rep.OK()}, nil
}

func (h *Handler) gc(ctx context.Context, c *call) (any, error) {
	var a struct {
		RetentionSeconds    int64 `json:"retention_seconds"`
		UploadExpirySeconds int64 `json:"upload_expiry_seconds"`
	}
	if err := c.decode(&a); err != nil {
		return nil, err
	}
	st, err := h.b.Collect(ctx, branch.GCOptions{
		Retention:    time.Duration(a.RetentionSeconds) * time.Second,
		UploadExpiry: time.Duration(a.UploadExpirySeconds) * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"stats": st}, nil
}

// visibleCommit is a commit as the caller may see it: a lease sees the
// message and provenance of its own run's commits only; of every other
// commit in its branch's history (the fork point, other runs' merged
// work, the owner's) it sees the ID, parents, tree and time.
func visibleCommit(c *call, j CommitJSON) CommitJSON {
	if l := c.p.Lease; l != nil && j.Run != l.Run {
		j.Message, j.Principal, j.OnBehalfOf, j.Run, j.Lease = "", "", "", "", ""
	}
	return j
}

// leaseRef checks that the caller may name ref in repo: for a lease, its
// own branch or a commit its branch has seen; anything else does not exist
// for it (answered alike whether it exists or not).
func (h *Handler) leaseRef(ctx context.Context, c *call, repo, ref string) error {
	t := auth.Target{Repo: repo, Branch: ref}
	if l := c.p.Lease; l != nil && ref != l.Branch {
		t = auth.Target{Repo: repo, Commit: ref}
	}
	return h.auth.Authorize(ctx, c.p, lease.List, t)
}

// visibleOnly drops changes to keys the caller may not list.
func visibleOnly(c *call, fn func(branch.Change) error) func(branch.Change) error {
	if c.p.IsOwner() {
		return fn
	}
	return func(ch branch.Change) error {
		if !c.p.Visible(ch.Key, lease.List) {
			return nil
		}
		return fn(ch)
	}
}
