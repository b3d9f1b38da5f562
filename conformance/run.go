package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/lease"
	"github.com/aws/aws-sdk-go-v2/aws"
)

// Target is the gateway under test.
type Target struct {
	Endpoint string
	Owner    aws.Credentials
	// Tamper, when set, alters one stored flight-recorder record (only a
	// caller that owns the gateway's storage can); it enables the second
	// half of L1.6.
	Tamper func(ctx context.Context) error
	// Mount, when set, mounts branch of repo with the lease credentials in
	// leaseJSON at a fresh directory and returns it and an unmount
	// function; it enables the mount parts of L0.5 and L1.3.
	Mount func(ctx context.Context, leaseJSON []byte) (dir string, unmount func(), err error)
	// MountMissing says why Mount is nil (no FUSE on this host, say), for
	// the deviations of L0.5 and L1.3.
	MountMissing string
	// Implementation and Version name what is tested.
	Implementation, Version string
}

// Report is conformance.json.
type Report struct {
	Implementation string            `json:"implementation"`
	Version        string            `json:"version"`
	Spec           string            `json:"spec"`
	Level          string            `json:"level"`
	Tests          map[string]string `json:"tests"`
	Deviations     []string          `json:"deviations"`
	// Details says, per test, what was checked or why it failed.
	Details map[string]string `json:"details"`
}

// run is one conformance session: a fresh repository and its fixtures.
type run struct {
	t     Target
	owner *principal
	repo  string
	role  string // the runs' role, defined by setup
	rep   *Report
}

type check struct {
	id string
	fn func(ctx context.Context, r *run) (pass bool, detail string, deviation string)
}

// Run runs every test and returns the report; it never stops at the
// first failure.
func Run(ctx context.Context, t Target) *Report {
	suffix := make([]byte, 4)
	rand.Read(suffix)
	r := &run{t: t, repo: "conformance-" + hex.EncodeToString(suffix), role: "cleo-" + hex.EncodeToString(suffix),
		owner: newPrincipal(strings.TrimSuffix(t.Endpoint, "/"), t.Owner, &http.Client{Timeout: time.Minute}),
		rep:   &Report{Implementation: t.Implementation, Version: t.Version, Spec: "0.2", Tests: map[string]string{}, Deviations: []string{}, Details: map[string]string{}}}
	if err := r.setup(ctx); err != nil {
		for _, c := range suite() {
			r.rep.Tests[c.id] = "fail"
			r.rep.Details[c.id] = "setup failed: " + err.Error()
		}
		r.rep.Level = "none"
		return r.rep
	}
	for _, c := range suite() {
		pass, detail, dev := c.fn(ctx, r)
		r.rep.Tests[c.id] = map[bool]string{true: "pass", false: "fail"}[pass]
		r.rep.Details[c.id] = detail
		if dev != "" {
			r.rep.Deviations = append(r.rep.Deviations, c.id+": "+dev)
		}
	}
	sort.Strings(r.rep.Deviations)
	r.rep.Level = "none"
	for _, lvl := range []string{"L0", "L1", "L2", "L3"} {
		if !r.all(lvl + ".") {
			break
		}
		r.rep.Level = lvl
	}
	return r.rep
}

// suite is every test, level by level.
func suite() []check { return slices.Concat(checks, l2Checks, l3Checks) }

func (r *run) all(prefix string) bool {
	for id, res := range r.rep.Tests {
		if strings.HasPrefix(id, prefix) && res != "pass" {
			return false
		}
	}
	return true
}

// setup makes a repository whose main is protected and holds a few files,
// seeded the only way a protected tree changes: a merge.
func (r *run) setup(ctx context.Context) error {
	o := r.owner
	protected := true
	if err := o.api.Do(ctx, apiv1.RepoCreateRequest{Repo: r.repo, Protected: &protected}, nil); err != nil {
		return fmt.Errorf("repo/create: %w", err)
	}
	if err := o.api.Do(ctx, apiv1.BranchCreateRequest{Repo: r.repo, Name: "seed", From: "main"}, nil); err != nil {
		return fmt.Errorf("branch/create: %w", err)
	}
	for k, v := range map[string]string{"shared/launch/notes.md": "notes v1", "shared/launch/old.md": "old", "finance/salaries.txt": "secret"} {
		if err := o.put(ctx, r.repo+"_seed", k, v); err != nil {
			return fmt.Errorf("seed %s: %w", k, err)
		}
	}
	if err := o.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: "seed", Message: "seed"}, nil); err != nil {
		return fmt.Errorf("commit/create: %w", err)
	}
	if err := o.api.Do(ctx, apiv1.MergeCreateRequest{Repo: r.repo, From: "seed", Into: "main"}, nil); err != nil {
		return fmt.Errorf("merge/create: %w", err)
	}
	// The owner's envelope for the runs: leases of the role are held to it.
	role := lease.Role{Name: r.role, Repo: r.repo, ForkFrom: "main", MaxTTL: lease.Duration(24 * time.Hour),
		View: []lease.Rule{{Path: "**", Actions: []lease.Action{lease.List, lease.Read, lease.Write, lease.Delete, lease.Propose}}}}
	if err := o.api.Do(ctx, apiv1.RolePutRequest{Role: role}, nil); err != nil {
		return fmt.Errorf("role/put: %w", err)
	}
	return nil
}

// runLease issues a lease of the run's role on a fork of main; each of
// edits changes the request first.
func (r *run) runLease(ctx context.Context, edits ...func(*apiv1.LeaseCreateRequest)) (*principal, apiv1.Lease, error) {
	req := apiv1.LeaseCreateRequest{Repo: r.repo, Role: r.role, ForkFrom: "main", Paths: []string{"shared/launch/**"},
		Actions: []string{"list", "read", "write", "delete", "propose"}, TTL: "1h", Purpose: "conformance"}
	for _, edit := range edits {
		edit(&req)
	}
	return r.owner.leaseOf(ctx, req)
}

var checks = []check{
	{"L0.1", func(ctx context.Context, r *run) (bool, string, string) {
		lc, l, err := r.runLease(ctx)
		if err != nil {
			return false, "lease: " + err.Error(), ""
		}
		if err := lc.put(ctx, r.repo, "shared/launch/notes.md", "changed by the run"); err != nil {
			return false, "write on the run branch: " + err.Error(), ""
		}
		got, err := r.owner.get(ctx, r.repo, "shared/launch/notes.md")
		if err != nil || got != "notes v1" {
			return false, fmt.Sprintf("main changed: %q %v", got, err), ""
		}
		return true, "a write on " + l.Branch + " left protected main unchanged", ""
	}},
	{"L0.2", func(ctx context.Context, r *run) (bool, string, string) {
		err := r.owner.put(ctx, r.repo, "shared/launch/notes.md", "direct")
		if code(err) != "AccessDenied" {
			return false, "a direct write to protected main with the owner's credentials answered " + code(err), ""
		}
		err = r.owner.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: "main", AllowEmpty: true}, nil)
		if code(err) != "AccessDenied" {
			return false, "a direct commit on protected main answered " + code(err), ""
		}
		return true, "PUT and commit on protected main refused with AccessDenied, even with the owner's credentials", ""
	}},
	{"L0.3", func(ctx context.Context, r *run) (bool, string, string) {
		o := r.owner
		if err := o.api.Do(ctx, apiv1.BranchCreateRequest{Repo: r.repo, Name: "cleanup", From: "main"}, nil); err != nil {
			return false, err.Error(), ""
		}
		if _, err := o.s3().DeleteObject(ctx, deleteInput(r.repo+"_cleanup", "shared/launch/old.md")); err != nil {
			return false, err.Error(), ""
		}
		if err := o.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: "cleanup", Message: "delete old"}, nil); err != nil {
			return false, err.Error(), ""
		}
		if err := o.api.Do(ctx, apiv1.MergeCreateRequest{Repo: r.repo, From: "cleanup", Into: "main"}, nil); err != nil {
			return false, "merge deleting from protected main: " + err.Error(), ""
		}
		if _, err := o.get(ctx, r.repo, "shared/launch/old.md"); code(err) != "NoSuchKey" {
			return false, "the delete did not reach main: " + code(err), ""
		}
		if err := o.api.Do(ctx, apiv1.TrashRestoreRequest{Repo: r.repo, Path: "shared/launch/old.md"}, nil); err != nil {
			return false, "restore from the trash: " + err.Error(), ""
		}
		if got, err := o.get(ctx, r.repo, "shared/launch/old.md"); err != nil || got != "old" {
			return false, fmt.Sprintf("restored content %q %v", got, err), ""
		}
		return true, "a file deleted from protected main by a merge was restored from the trash", ""
	}},
	{"L0.4", checkExport},
	{"L0.5", func(ctx context.Context, r *run) (bool, string, string) {
		if _, err := r.owner.get(ctx, r.repo, "shared/launch/notes.md"); err != nil {
			return false, "S3 view: " + err.Error(), ""
		}
		if r.t.Mount == nil {
			return false, "only the S3 view was exercised: no mount was provided to the runner" + r.noMount(), "the mount view was not exercised by this run" + r.noMount()
		}
		pass, detail := checkMountView(ctx, r)
		return pass, detail, ""
	}},
	{"L1.1", func(ctx context.Context, r *run) (bool, string, string) {
		// An unsigned GET: nobody's credentials.
		resp, err := r.owner.http.Get(r.owner.endpoint + "/" + r.repo + "/shared/launch/notes.md")
		if err != nil {
			return false, err.Error(), ""
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			return false, fmt.Sprintf("an anonymous GET answered %d", resp.StatusCode), ""
		}
		var recs apiv1.RecordListResponse
		if err := r.owner.api.Do(ctx, apiv1.RecordListRequest{Kinds: []string{"denied"}, Page: apiv1.Page{Limit: apiv1.MaxLimit}}, &recs); err != nil {
			return false, err.Error(), ""
		}
		for _, rec := range recs.Records {
			if rec.Principal == "anonymous" && strings.Contains(rec.Subject.Path, r.repo) {
				return true, "an unauthenticated request was refused (403) and the refusal recorded", ""
			}
		}
		return false, "the refusal was not found in the flight recorder", ""
	}},
	{"L1.2", func(ctx context.Context, r *run) (bool, string, string) {
		lc, _, err := r.runLease(ctx, func(l *apiv1.LeaseCreateRequest) { l.Actions = []string{"list", "read"} })
		if err != nil {
			return false, err.Error(), ""
		}
		for what, req := range map[string]apiv1.LeaseCreateRequest{
			"path":   {Paths: []string{"finance/**"}, Actions: []string{"read"}},
			"action": {Paths: []string{"shared/launch/**"}, Actions: []string{"write"}},
			"expiry": {Paths: []string{"shared/launch/**"}, Actions: []string{"read"}, TTL: "23h"},
		} {
			err := lc.api.Do(ctx, req, nil)
			if err == nil {
				return false, "a child lease wider in " + what + " was issued", ""
			}
			if what != "expiry" && !strings.Contains(strings.ToLower(err.Error()), "wider") && !strings.Contains(err.Error(), "parent") {
				return false, "refused without a reason: " + err.Error(), ""
			}
		}
		return true, "child leases wider in paths, actions or expiry were refused with the reason", ""
	}},
	{"L1.3", func(ctx context.Context, r *run) (bool, string, string) {
		dev := "revocation and expiry take effect on the next request (no delay)"
		lc, l, err := r.runLease(ctx)
		if err != nil {
			return false, err.Error(), ""
		}
		// With a mount, each lease is also mounted before it ends.
		var revoked, expired *endedMount
		if r.t.Mount != nil {
			if revoked, err = r.mountToEnd(ctx, l); err != nil {
				return false, err.Error(), dev
			}
			defer revoked.close()
		}
		if err := r.owner.api.Do(ctx, apiv1.LeaseRevokeRequest{LeaseID: l.ID}, nil); err != nil {
			return false, err.Error(), ""
		}
		if _, err := lc.get(ctx, r.repo, "shared/launch/notes.md"); code(err) != "InvalidAccessKeyId" {
			return false, "the request after revocation answered " + code(err), ""
		}
		if revoked != nil {
			if err := revoked.check("revocation"); err != nil {
				return false, err.Error(), dev
			}
		}
		sl, short, err := r.runLease(ctx, func(l *apiv1.LeaseCreateRequest) { l.TTL = "2s" })
		if err != nil {
			return false, err.Error(), ""
		}
		if r.t.Mount != nil {
			if expired, err = r.mountToEnd(ctx, short); err != nil {
				return false, err.Error(), dev
			}
			defer expired.close()
		}
		time.Sleep(2500 * time.Millisecond)
		if _, err := sl.get(ctx, r.repo, "shared/launch/notes.md"); code(err) != "ExpiredToken" {
			return false, "a request after expiry answered " + code(err), ""
		}
		if r.t.Mount == nil {
			return false, "revocation and expiry checked over S3; the mount's read-only switch was not exercised (no mount provided)" + r.noMount(), dev
		}
		if err := expired.check("expiry"); err != nil {
			return false, err.Error(), dev
		}
		return true, "revocation and expiry apply on the next request, over S3 and on the mount (ESTALE, then EROFS: the mount turns read-only)", dev
	}},
	{"L1.4", func(ctx context.Context, r *run) (bool, string, string) {
		o := r.owner
		snap := apiv1.CheckpointRequest{Repo: r.repo, Branch: "main", Name: "snap"}
		if err := o.api.Do(ctx, apiv1.CheckpointCreateRequest(snap), nil); err != nil {
			return false, err.Error(), ""
		}
		lc, _, err := r.runLease(ctx)
		if err != nil {
			return false, err.Error(), ""
		}
		// The owner's snapshot of main is outside every run's lease.
		for _, req := range []apiv1.Request{apiv1.CheckpointListRequest(snap), apiv1.CheckpointRestoreRequest(snap), apiv1.CheckpointCreateRequest(snap)} {
			if err := lc.api.Do(ctx, req, nil); code(err) != apiv1.CodeNotFound {
				return false, "a lease calling " + req.Op() + " on main answered " + code(err), ""
			}
		}
		for _, req := range []apiv1.Request{apiv1.TrashRestoreRequest{Repo: r.repo, Path: "shared/launch/notes.md"}, apiv1.TrashListRequest{Repo: r.repo}, apiv1.GCRequest{}} {
			if err := lc.api.Do(ctx, req, nil); code(err) != apiv1.CodeAccessDenied {
				return false, "a lease calling " + req.Op() + " answered " + code(err), ""
			}
		}
		// A run's own save point: going back to it leaves it, and the
		// owner's snapshot, where they were.
		own := apiv1.CheckpointRequest{Repo: r.repo, Name: "mine"}
		if err := lc.api.Do(ctx, apiv1.CheckpointCreateRequest(own), nil); err != nil {
			return false, "a run's checkpoint of its own branch: " + err.Error(), ""
		}
		if err := lc.put(ctx, r.repo, "shared/launch/draft.md", "draft"); err != nil {
			return false, err.Error(), ""
		}
		if err := lc.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Message: "draft"}, nil); err != nil {
			return false, err.Error(), ""
		}
		if err := lc.api.Do(ctx, apiv1.CheckpointRestoreRequest(own), nil); err != nil {
			return false, "a run's restore of its own checkpoint: " + err.Error(), ""
		}
		var mine, cps apiv1.CheckpointListResponse
		if err := lc.api.Do(ctx, apiv1.CheckpointListRequest(own), &mine); err != nil || len(mine.Checkpoints) != 1 {
			return false, fmt.Sprintf("the run's checkpoint after its restore: %v %v", mine.Checkpoints, err), ""
		}
		if err := o.api.Do(ctx, apiv1.CheckpointListRequest{Repo: r.repo, Branch: "main"}, &cps); err != nil || len(cps.Checkpoints) != 1 {
			return false, fmt.Sprintf("the checkpoint is gone: %v", err), ""
		}
		return true, "no lease reaches a snapshot outside its branch or the trash (every call refused, the snapshot stays); " +
			"a run's own checkpoints can be restored but not removed", ""
	}},
	{"L1.5", func(ctx context.Context, r *run) (bool, string, string) {
		lc, l, err := r.runLease(ctx)
		if err != nil {
			return false, err.Error(), ""
		}
		if _, err := lc.get(ctx, r.repo, "shared/launch/notes.md"); err != nil {
			return false, err.Error(), ""
		}
		if err := lc.put(ctx, r.repo, "shared/launch/draft.md", "draft"); err != nil {
			return false, err.Error(), ""
		}
		var cm apiv1.CommitResponse
		if err := lc.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: l.Branch, Message: "draft"}, &cm); err != nil {
			return false, err.Error(), ""
		}
		var ex apiv1.RecordExplainResponse
		if err := r.owner.api.Do(ctx, apiv1.RecordExplainRequest{Repo: r.repo, Commit: cm.Commit.ID}, &ex); err != nil {
			return false, err.Error(), ""
		}
		e := ex.Explanation
		reads := 0
		if e.ReadManifest != nil {
			reads = len(e.ReadManifest.Reads)
		}
		if e.Run != l.Run || e.Lease != l.ID || reads == 0 {
			return false, fmt.Sprintf("explain gave run %q lease %q and %d reads", e.Run, e.Lease, reads), ""
		}
		return true, "the run's commit explains back to its run, lease and read manifest", ""
	}},
	{"L1.6", func(ctx context.Context, r *run) (bool, string, string) {
		var v apiv1.RecordVerifyResponse
		if err := r.owner.api.Do(ctx, apiv1.RecordVerifyRequest{}, &v); err != nil || !v.OK {
			return false, fmt.Sprintf("verification of the untouched chain: ok=%v %v", v.OK, err), ""
		}
		if r.t.Tamper == nil {
			return false, "the chain verifies; tampering needs the store, which a remote runner does not have", "the tamper half runs only when the runner owns the gateway (nas conformance without --endpoint)"
		}
		if err := r.t.Tamper(ctx); err != nil {
			return false, "tamper: " + err.Error(), ""
		}
		if err := r.owner.api.Do(ctx, apiv1.RecordVerifyRequest{}, &v); err != nil {
			return false, err.Error(), ""
		}
		if v.OK {
			return false, "verification passed after a record was altered", ""
		}
		return true, "the chain verifies, and fails after one record is altered", ""
	}},
	{"L1.7", checkGateCard},
}

// checkGateCard is L1.7: a run's proposal is gated, the Gate Card shows
// the gateway's diff, the run cannot decide its own gate, and changing
// the diff after the card voids the owner's approval.
func checkGateCard(ctx context.Context, r *run) (bool, string, string) {
	lc, l, err := r.runLease(ctx)
	if err != nil {
		return false, err.Error(), ""
	}
	if err := lc.put(ctx, r.repo, "shared/launch/release.md", "v1"); err != nil {
		return false, err.Error(), ""
	}
	var p apiv1.ProposeCreateResponse
	if err := lc.api.Do(ctx, apiv1.ProposeCreateRequest{Repo: r.repo, Into: "main", Intent: "release notes"}, &p); err != nil {
		return false, err.Error(), ""
	}
	var g apiv1.GateResponse
	if err := r.owner.api.Do(ctx, apiv1.GateGetRequest{GateID: p.Proposal.GateID}, &g); err != nil {
		return false, err.Error(), ""
	}
	a := g.Gate.Card.Action
	if a.DiffSHA256 != p.Proposal.Digest || len(a.Changes) != 1 || a.Changes[0].Key != "shared/launch/release.md" {
		return false, "the Gate Card does not show the gateway's diff", ""
	}
	approve := apiv1.GateApproveRequest{GateID: p.Proposal.GateID}
	if err := lc.api.Do(ctx, approve, nil); code(err) != apiv1.CodeAccessDenied {
		return false, "the run could decide its own gate: " + code(err), ""
	}
	// The run changes the diff after the card was made.
	if err := lc.put(ctx, r.repo, "shared/launch/sneaky.md", "x"); err != nil {
		return false, err.Error(), ""
	}
	if err := lc.api.Do(ctx, apiv1.CommitCreateRequest{Repo: r.repo, Branch: l.Branch, Message: "after the card"}, nil); err != nil {
		return false, err.Error(), ""
	}
	if err := r.owner.api.Do(ctx, approve, nil); code(err) != apiv1.CodeApprovalVoid {
		return false, "an approval after the diff changed answered " + code(err), ""
	}
	if _, err := r.owner.get(ctx, r.repo, "shared/launch/release.md"); code(err) != "NoSuchKey" {
		return false, "the void approval merged", ""
	}
	return true, "the Gate Card shows the gateway's diff and digest; changing the diff voids the approval", ""
}

// noMount says why no mount was provided, when the caller said.
func (r *run) noMount() string {
	if r.t.MountMissing == "" {
		return ""
	}
	return " (" + r.t.MountMissing + ")"
}

// Declared reports whether a deviation is declared for test id.
func (rep *Report) Declared(id string) bool {
	for _, d := range rep.Deviations {
		if strings.HasPrefix(d, id+": ") {
			return true
		}
	}
	return false
}
