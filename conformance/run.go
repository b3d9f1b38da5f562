package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

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
		owner: &principal{endpoint: strings.TrimSuffix(t.Endpoint, "/"), creds: t.Owner, http: &http.Client{Timeout: time.Minute}},
		rep:   &Report{Implementation: t.Implementation, Version: t.Version, Spec: "0.2", Tests: map[string]string{}, Deviations: []string{}, Details: map[string]string{}}}
	if err := r.setup(ctx); err != nil {
		for _, c := range checks {
			r.rep.Tests[c.id] = "fail"
			r.rep.Details[c.id] = "setup failed: " + err.Error()
		}
		r.rep.Level = "none"
		return r.rep
	}
	for _, c := range checks {
		pass, detail, dev := c.fn(ctx, r)
		r.rep.Tests[c.id] = map[bool]string{true: "pass", false: "fail"}[pass]
		r.rep.Details[c.id] = detail
		if dev != "" {
			r.rep.Deviations = append(r.rep.Deviations, c.id+": "+dev)
		}
	}
	sort.Strings(r.rep.Deviations)
	r.rep.Level = "none"
	if r.all("L0.") {
		r.rep.Level = "L0"
		if r.all("L1.") {
			r.rep.Level = "L1"
		}
	}
	return r.rep
}

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
	if err := o.call(ctx, "repo/create", map[string]any{"repo": r.repo, "protected": true}, nil); err != nil {
		return fmt.Errorf("repo/create: %w", err)
	}
	if err := o.call(ctx, "branch/create", map[string]any{"repo": r.repo, "name": "seed", "from": "main"}, nil); err != nil {
		return fmt.Errorf("branch/create: %w", err)
	}
	for k, v := range map[string]string{"shared/launch/notes.md": "notes v1", "shared/launch/old.md": "old", "finance/salaries.txt": "secret"} {
		if err := o.put(ctx, r.repo+"_seed", k, v); err != nil {
			return fmt.Errorf("seed %s: %w", k, err)
		}
	}
	if err := o.call(ctx, "commit/create", map[string]any{"repo": r.repo, "branch": "seed", "message": "seed"}, nil); err != nil {
		return err
	}
	if err := o.call(ctx, "merge/create", map[string]any{"repo": r.repo, "from": "seed", "into": "main"}, nil); err != nil {
		return err
	}
	// The owner's envelope for the runs: leases of the role are held to it.
	return o.call(ctx, "role/put", map[string]any{"name": r.role, "repo": r.repo, "fork_from": "main", "max_ttl": "24h",
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write", "delete", "propose"}}}}, nil)
}

// runLease issues a lease of the run's role on a fork of main.
func (r *run) runLease(ctx context.Context, extra map[string]any) (*principal, map[string]any, error) {
	args := map[string]any{"repo": r.repo, "role": r.role, "fork_from": "main", "paths": []string{"shared/launch/**"},
		"actions": []string{"list", "read", "write", "delete", "propose"}, "ttl": "1h", "purpose": "conformance"}
	for k, v := range extra {
		args[k] = v
	}
	return r.owner.leaseOf(ctx, args)
}

var checks = []check{
	{"L0.1", func(ctx context.Context, r *run) (bool, string, string) {
		lc, l, err := r.runLease(ctx, nil)
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
		return true, "a write on " + l["branch"].(string) + " left protected main unchanged", ""
	}},
	{"L0.2", func(ctx context.Context, r *run) (bool, string, string) {
		err := r.owner.put(ctx, r.repo, "shared/launch/notes.md", "direct")
		if code(err) != "AccessDenied" {
			return false, "a direct write to protected main with the owner's credentials answered " + code(err), ""
		}
		err = r.owner.call(ctx, "commit/create", map[string]any{"repo": r.repo, "branch": "main", "allow_empty": true}, nil)
		if code(err) != "AccessDenied" {
			return false, "a direct commit on protected main answered " + code(err), ""
		}
		return true, "PUT and commit on protected main refused with AccessDenied, even with the owner's credentials", ""
	}},
	{"L0.3", func(ctx context.Context, r *run) (bool, string, string) {
		o := r.owner
		if err := o.call(ctx, "branch/create", map[string]any{"repo": r.repo, "name": "cleanup", "from": "main"}, nil); err != nil {
			return false, err.Error(), ""
		}
		if _, err := o.s3().DeleteObject(ctx, deleteInput(r.repo+"_cleanup", "shared/launch/old.md")); err != nil {
			return false, err.Error(), ""
		}
		if err := o.call(ctx, "commit/create", map[string]any{"repo": r.repo, "branch": "cleanup", "message": "delete old"}, nil); err != nil {
			return false, err.Error(), ""
		}
		if err := o.call(ctx, "merge/create", map[string]any{"repo": r.repo, "from": "cleanup", "into": "main"}, nil); err != nil {
			return false, "merge deleting from protected main: " + err.Error(), ""
		}
		if _, err := o.get(ctx, r.repo, "shared/launch/old.md"); code(err) != "NoSuchKey" {
			return false, "the delete did not reach main: " + code(err), ""
		}
		if err := o.call(ctx, "trash/restore", map[string]any{"repo": r.repo, "path": "shared/launch/old.md"}, nil); err != nil {
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
		anon := &principal{endpoint: r.owner.endpoint, http: r.owner.http}
		resp, err := anon.http.Get(anon.endpoint + "/" + r.repo + "/shared/launch/notes.md")
		if err != nil {
			return false, err.Error(), ""
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			return false, fmt.Sprintf("an anonymous GET answered %d", resp.StatusCode), ""
		}
		var recs struct {
			Records []struct {
				Principal string `json:"principal"`
				Subject   struct {
					Path string `json:"path"`
				} `json:"subject"`
			} `json:"records"`
		}
		if err := r.owner.call(ctx, "record/list", map[string]any{"kinds": []string{"denied"}, "limit": 10000}, &recs); err != nil {
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
		lc, _, err := r.runLease(ctx, map[string]any{"actions": []string{"list", "read"}})
		if err != nil {
			return false, err.Error(), ""
		}
		for what, args := range map[string]map[string]any{
			"path":   {"paths": []string{"finance/**"}, "actions": []string{"read"}},
			"action": {"paths": []string{"shared/launch/**"}, "actions": []string{"write"}},
			"expiry": {"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "ttl": "23h"},
		} {
			err := lc.call(ctx, "lease/create", args, nil)
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
		lc, l, err := r.runLease(ctx, nil)
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
		if err := r.owner.call(ctx, "lease/revoke", map[string]any{"lease_id": l["lease_id"]}, nil); err != nil {
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
		sl, short, err := r.runLease(ctx, map[string]any{"ttl": "2s"})
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
		if err := o.call(ctx, "checkpoint/create", map[string]any{"repo": r.repo, "branch": "main", "name": "snap"}, nil); err != nil {
			return false, err.Error(), ""
		}
		lc, _, err := r.runLease(ctx, nil)
		if err != nil {
			return false, err.Error(), ""
		}
		for _, op := range []string{"checkpoint/list", "checkpoint/restore", "checkpoint/create", "trash/restore", "trash/list", "admin/gc"} {
			if err := lc.call(ctx, op, map[string]any{"repo": r.repo, "branch": "main", "name": "snap"}, nil); code(err) != "AccessDenied" {
				return false, "a lease calling " + op + " answered " + code(err), ""
			}
		}
		var cps struct {
			Checkpoints []map[string]any `json:"checkpoints"`
		}
		if err := o.call(ctx, "checkpoint/list", map[string]any{"repo": r.repo, "branch": "main"}, &cps); err != nil || len(cps.Checkpoints) != 1 {
			return false, fmt.Sprintf("the checkpoint is gone: %v", err), ""
		}
		return true, "checkpoints and the trash are owner-only: every lease call is refused and the snapshot stays", ""
	}},
	{"L1.5", func(ctx context.Context, r *run) (bool, string, string) {
		lc, l, err := r.runLease(ctx, nil)
		if err != nil {
			return false, err.Error(), ""
		}
		if _, err := lc.get(ctx, r.repo, "shared/launch/notes.md"); err != nil {
			return false, err.Error(), ""
		}
		if err := lc.put(ctx, r.repo, "shared/launch/draft.md", "draft"); err != nil {
			return false, err.Error(), ""
		}
		var cm struct {
			Commit struct {
				ID string `json:"id"`
			} `json:"commit"`
		}
		if err := lc.call(ctx, "commit/create", map[string]any{"repo": r.repo, "branch": l["branch"], "message": "draft"}, &cm); err != nil {
			return false, err.Error(), ""
		}
		var ex struct {
			Explanation struct {
				Run          string `json:"run"`
				Lease        string `json:"lease"`
				ReadManifest struct {
					Reads []struct {
						Path string `json:"path"`
					} `json:"reads"`
				} `json:"read_manifest"`
			} `json:"explanation"`
		}
		if err := r.owner.call(ctx, "record/explain", map[string]any{"repo": r.repo, "commit": cm.Commit.ID}, &ex); err != nil {
			return false, err.Error(), ""
		}
		e := ex.Explanation
		if e.Run != l["run"] || e.Lease != l["lease_id"] || len(e.ReadManifest.Reads) == 0 {
			return false, fmt.Sprintf("explain gave run %q lease %q and %d reads", e.Run, e.Lease, len(e.ReadManifest.Reads)), ""
		}
		return true, "the run's commit explains back to its run, lease and read manifest", ""
	}},
	{"L1.6", func(ctx context.Context, r *run) (bool, string, string) {
		var v struct {
			OK bool `json:"ok"`
		}
		if err := r.owner.call(ctx, "record/verify", map[string]any{}, &v); err != nil || !v.OK {
			return false, fmt.Sprintf("verification of the untouched chain: ok=%v %v", v.OK, err), ""
		}
		if r.t.Tamper == nil {
			return false, "the chain verifies; tampering needs the store, which a remote runner does not have", "the tamper half runs only when the runner owns the gateway (nas conformance without --endpoint)"
		}
		if err := r.t.Tamper(ctx); err != nil {
			return false, "tamper: " + err.Error(), ""
		}
		if err := r.owner.call(ctx, "record/verify", map[string]any{}, &v); err != nil {
			return false, err.Error(), ""
		}
		if v.OK {
			return false, "verification passed after a record was altered", ""
		}
		return true, "the chain verifies, and fails after one record is altered", ""
	}},
	{"L1.7", func(ctx context.Context, r *run) (bool, string, string) {
		lc, l, err := r.runLease(ctx, nil)
		if err != nil {
			return false, err.Error(), ""
		}
		if err := lc.put(ctx, r.repo, "shared/launch/release.md", "v1"); err != nil {
			return false, err.Error(), ""
		}
		var p struct {
			Proposal struct {
				GateID string `json:"gate_id"`
				Digest string `json:"diff_sha256"`
			} `json:"proposal"`
		}
		if err := lc.call(ctx, "propose/create", map[string]any{"repo": r.repo, "into": "main", "intent": "release notes"}, &p); err != nil {
			return false, err.Error(), ""
		}
		var g struct {
			Gate struct {
				Card struct {
					Action struct {
						DiffSHA256 string `json:"diff_sha256"`
						Changes    []struct {
							Key string `json:"key"`
						} `json:"changes"`
					} `json:"action"`
				} `json:"card"`
			} `json:"gate"`
		}
		if err := r.owner.call(ctx, "gate/get", map[string]any{"gate_id": p.Proposal.GateID}, &g); err != nil {
			return false, err.Error(), ""
		}
		a := g.Gate.Card.Action
		if a.DiffSHA256 != p.Proposal.Digest || len(a.Changes) != 1 || a.Changes[0].Key != "shared/launch/release.md" {
			return false, "the Gate Card does not show the gateway's diff", ""
		}
		if err := lc.call(ctx, "gate/approve", map[string]any{"gate_id": p.Proposal.GateID}, nil); code(err) != "AccessDenied" {
			return false, "the run could decide its own gate: " + code(err), ""
		}
		// The run changes the diff after the card was made.
		if err := lc.put(ctx, r.repo, "shared/launch/sneaky.md", "x"); err != nil {
			return false, err.Error(), ""
		}
		if err := lc.call(ctx, "commit/create", map[string]any{"repo": r.repo, "branch": l["branch"], "message": "after the card"}, nil); err != nil {
			return false, err.Error(), ""
		}
		if err := r.owner.call(ctx, "gate/approve", map[string]any{"gate_id": p.Proposal.GateID}, nil); code(err) != "ApprovalVoid" {
			return false, "an approval after the diff changed answered " + code(err), ""
		}
		if _, err := r.owner.get(ctx, r.repo, "shared/launch/release.md"); code(err) != "NoSuchKey" {
			return false, "the void approval merged", ""
		}
		return true, "the Gate Card shows the gateway's diff and digest; changing the diff voids the approval", ""
	}},
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
