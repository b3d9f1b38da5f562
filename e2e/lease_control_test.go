package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentnas/nas/nastest"
)

// Sections 4 and 5: the control API under a lease, and child leases.

func roleArn(name string) *string { return aws.String("arn:aws:iam::000000000000:role/" + name) }

// changeKeys returns the keys of a diff/list or changes/list answer.
func changeKeys(out map[string]any) []string {
	var keys []string
	for _, c := range out["changes"].([]any) {
		keys = append(keys, c.(map[string]any)["key"].(string))
	}
	return keys
}

func TestLeaseControlAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "ctl"
	createBucket(t, own, repo)
	createBucket(t, own, "other")
	for k, v := range map[string]string{"shared/launch/a.txt": "launch-a", "shared/launch/sub/b.txt": "launch-b",
		"shared/readonly/r.txt": "readonly-r", "finance/x": "finance-x"} {
		put(t, own, repo, k, []byte(v))
	}
	fork := oc.commit(repo, "main", "seed")
	view := []map[string]any{
		{"path": "shared/launch/**", "actions": []string{"list", "read", "write", "delete"}},
		{"path": "shared/readonly/**", "actions": []string{"list", "read"}},
	}
	budgets := map[string]any{"bytes_read": 1 << 20, "bytes_written": 1 << 20, "requests": 10000}
	p := oc.newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h", "purpose": "control test",
		"view": view, "budgets": budgets})
	pc := leaseCtl(t, srv, p)
	ps3 := leaseS3(t, srv, p)
	ownBr := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(p.Branch)}})
	put(t, own, repo, "shared/launch/main-later", []byte("main"))
	after := oc.commit(repo, "main", "after the fork")
	put(t, ownBr, repo, "finance/branch.txt", []byte("hidden on the branch"))
	oc.ok("branch/create", map[string]any{"repo": repo, "name": "scratch", "from": "main"})
	put(t, newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch("scratch")}}), repo, "shared/launch/s", []byte("s"))
	scratch := oc.commit(repo, "scratch", "scratch work")

	t.Run("OwnerOperationsRefused", func(t *testing.T) {
		pc := pc.as(t)
		for _, tc := range []struct {
			op   string
			args map[string]any
		}{
			{"repo/list", map[string]any{}},
			{"repo/get", map[string]any{"repo": repo}},
			{"repo/create", map[string]any{"repo": "evil"}},
			{"repo/delete", map[string]any{"repo": "other"}},
			{"branch/create", map[string]any{"repo": repo, "name": "evil", "from": "main"}},
			{"branch/list", map[string]any{"repo": repo}},
			{"branch/get", map[string]any{"repo": repo, "name": "main"}},
			{"branch/delete", map[string]any{"repo": repo, "name": "scratch"}},
			{"branch/protect", map[string]any{"repo": repo, "name": p.Branch}},
			{"branch/unprotect", map[string]any{"repo": repo, "name": p.Branch}},
			{"role/put", map[string]any{"name": "evil", "repo": repo, "view": []map[string]any{{"path": "**", "actions": []string{"read"}}}}},
			{"role/get", map[string]any{"name": "agent"}},
			{"role/list", map[string]any{}},
			{"role/delete", map[string]any{"name": "agent"}},
			{"lease/list", map[string]any{}},
			{"share/grant", map[string]any{"lease_id": p.ID, "path": "finance/**", "actions": []string{"list", "read"}, "ttl": "1h"}},
			{"record/list", map[string]any{}},
			{"record/explain", map[string]any{"repo": repo, "commit": fork}},
			{"record/verify", map[string]any{}},
			{"admin/fsck", map[string]any{}},
			{"admin/gc", map[string]any{}},
		} {
			t.Run(strings.ReplaceAll(tc.op, "/", "_"), func(t *testing.T) {
				pc.as(t).fails(tc.op, tc.args, http.StatusForbidden, "AccessDenied")
			})
		}
		// Nothing happened.
		branches := oc.as(t).ok("branch/list", map[string]any{"repo": repo})["branches"].([]any)
		for _, b := range branches {
			if b.(map[string]any)["name"] == "evil" {
				t.Fatal("a lease created a branch")
			}
		}
		oc.as(t).fails("repo/get", map[string]any{"repo": "evil"}, http.StatusNotFound, "NotFound")
		oc.as(t).ok("repo/get", map[string]any{"repo": "other"})
		_, err := ps3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("finance/x")})
		wantErr(t, err, http.StatusNotFound, "NoSuchKey") // no grant was added
	})

	t.Run("RefsOutsideTheLease", func(t *testing.T) {
		pc := pc.as(t)
		for _, tc := range []struct {
			name, op string
			args     map[string]any
		}{
			{"DiffMainToBranch", "diff/list", map[string]any{"repo": repo, "from": "main", "to": p.Branch}},
			{"DiffBranchToMain", "diff/list", map[string]any{"repo": repo, "from": p.Branch, "to": "main"}},
			{"DiffForkToMain", "diff/list", map[string]any{"repo": repo, "from": fork, "to": "main"}},
			{"DiffCommitAfterFork", "diff/list", map[string]any{"repo": repo, "from": fork, "to": after}},
			{"DiffOtherBranchCommit", "diff/list", map[string]any{"repo": repo, "from": fork, "to": scratch}},
			{"DiffOtherBranch", "diff/list", map[string]any{"repo": repo, "from": fork, "to": "scratch"}},
			{"DiffOtherRepo", "diff/list", map[string]any{"repo": "other", "from": "main", "to": "main"}},
			{"LogMain", "commit/log", map[string]any{"repo": repo, "ref": "main"}},
			{"LogCommitAfterFork", "commit/log", map[string]any{"repo": repo, "ref": after}},
			{"LogOtherBranch", "commit/log", map[string]any{"repo": repo, "ref": "scratch"}},
			{"LogCursorAfterFork", "commit/log", map[string]any{"repo": repo, "ref": p.Branch, "cursor": after}},
			{"LogOtherRepo", "commit/log", map[string]any{"repo": "other", "ref": "main"}},
			{"ChangesMain", "changes/list", map[string]any{"repo": repo, "branch": "main"}},
			{"ChangesOtherBranch", "changes/list", map[string]any{"repo": repo, "branch": "scratch"}},
			{"CommitMain", "commit/create", map[string]any{"repo": repo, "branch": "main", "message": "x", "allow_empty": true}},
			{"CommitOtherBranch", "commit/create", map[string]any{"repo": repo, "branch": "scratch", "message": "x", "allow_empty": true}},
			{"CommitOtherRepo", "commit/create", map[string]any{"repo": "other", "branch": p.Branch, "message": "x", "allow_empty": true}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				pc.as(t).fails(tc.op, tc.args, http.StatusNotFound, "NotFound")
			})
		}
		// The fork commit is in its history.
		pc.ok("commit/log", map[string]any{"repo": repo, "ref": fork})
		b := oc.as(t).ok("branch/get", map[string]any{"repo": repo, "name": "main"})["branch"].(map[string]any)
		if b["head"] != after {
			t.Fatalf("main moved: %v", b)
		}
	})

	t.Run("CommitDiffAndChangesShowOnlyTheView", func(t *testing.T) {
		pc := pc.as(t)
		put(t, ps3, repo, "shared/launch/new.txt", []byte("new"))
		_, err := ps3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/sub/b.txt")})
		must(t, err)
		ch := changeKeys(pc.ok("changes/list", map[string]any{"repo": repo, "branch": p.Branch}))
		for _, want := range []string{"shared/launch/new.txt", "shared/launch/sub/b.txt"} {
			if !slices.Contains(ch, want) {
				t.Errorf("changes/list misses %q: %q", want, ch)
			}
		}
		for _, k := range ch {
			if !visibleUnder(k, "shared/launch/", "shared/readonly/") {
				t.Errorf("changes/list shows hidden %q", k)
			}
		}
		if all := changeKeys(oc.as(t).ok("changes/list", map[string]any{"repo": repo, "branch": p.Branch})); !slices.Contains(all, "finance/branch.txt") {
			t.Fatalf("owner's changes/list misses finance/branch.txt: %q", all)
		}
		// A paged listing leaks nothing through its cursor either.
		paged := pc.ok("changes/list", map[string]any{"repo": repo, "branch": p.Branch, "limit": 1})
		if c, _ := paged["next_cursor"].(string); c != "" && !visibleUnder(c, "shared/launch/", "shared/readonly/") {
			t.Errorf("changes/list cursor names hidden %q", c)
		}

		cm := pc.ok("commit/create", map[string]any{"repo": repo, "branch": p.Branch, "message": "agent work"})["commit"].(map[string]any)
		id := cm["id"].(string)
		if cm["lease"] != p.ID || cm["run"] != p.Run || cm["principal"] != p.Principal {
			t.Errorf("commit provenance: %v, want lease %s run %s principal %s", cm, p.ID, p.Run, p.Principal)
		}
		for _, args := range []map[string]any{
			{"repo": repo, "from": fork, "to": p.Branch},
			{"repo": repo, "from": fork, "to": id},
		} {
			d := changeKeys(pc.ok("diff/list", args))
			if !slices.Contains(d, "shared/launch/new.txt") {
				t.Errorf("diff %v misses shared/launch/new.txt: %q", args, d)
			}
			for _, k := range d {
				if !visibleUnder(k, "shared/launch/", "shared/readonly/") {
					t.Errorf("diff %v shows hidden %q", args, k)
				}
			}
		}
		if all := changeKeys(oc.as(t).ok("diff/list", map[string]any{"repo": repo, "from": fork, "to": id})); !slices.Contains(all, "finance/branch.txt") {
			t.Fatalf("owner's diff misses finance/branch.txt: %q", all)
		}
		log := pc.ok("commit/log", map[string]any{"repo": repo, "ref": p.Branch, "limit": 1})["commits"].([]any)
		if c := log[0].(map[string]any); c["id"] != id || c["lease"] != p.ID || c["run"] != p.Run {
			t.Errorf("commit/log head: %v", c)
		}
		ex := oc.as(t).ok("record/explain", map[string]any{"repo": repo, "commit": id})["explanation"].(map[string]any)
		if ex["run"] != p.Run || ex["lease"] != p.ID || ex["principal"] != p.Principal || ex["purpose"] != "control test" {
			t.Errorf("record/explain: run %v lease %v principal %v purpose %v; want %s %s %s %q",
				ex["run"], ex["lease"], ex["principal"], ex["purpose"], p.Run, p.ID, p.Principal, "control test")
		}
		// A lease without write cannot commit.
		ro := oc.as(t).newLease(map[string]any{"repo": repo, "role": "reader", "branch": p.Branch, "ttl": "1h",
			"paths": []string{"shared/**"}, "actions": []string{"list", "read"}})
		leaseCtl(t, srv, ro).fails("commit/create", map[string]any{"repo": repo, "branch": p.Branch, "message": "x", "allow_empty": true},
			http.StatusForbidden, "AccessDenied")
	})

	t.Run("OtherLeasesDoNotExist", func(t *testing.T) {
		q := oc.as(t).newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h", "view": view})
		pc := pc.as(t)
		pc.fails("lease/get", map[string]any{"lease_id": q.ID}, http.StatusNotFound, "NotFound")
		pc.fails("lease/revoke", map[string]any{"lease_id": q.ID}, http.StatusNotFound, "NotFound")
		got, _ := get(t, leaseS3(t, srv, q), repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("launch-a"))
		me := pc.ok("lease/get", map[string]any{})["lease"].(map[string]any)
		if me["lease_id"] != p.ID {
			t.Fatalf("lease/get: %v", me)
		}
		for _, k := range []string{"secret_access_key", "session_token"} {
			if _, ok := me[k]; ok {
				t.Errorf("lease/get shows %s", k)
			}
		}
	})

	t.Run("ChildLeases", func(t *testing.T) {
		t.Run("Narrower", func(t *testing.T) {
			pc := pc.as(t)
			c := pc.newLease(map[string]any{"paths": []string{"shared/launch/sub/**"}, "actions": []string{"list", "read"}, "ttl": "30m"})
			if c.Branch != p.Branch || c.Repo != repo || c.Run != p.Run || c.Raw["parent"] != p.ID {
				t.Fatalf("child: %v", c.Raw)
			}
			if !c.ExpiresAt.After(time.Now()) || c.ExpiresAt.After(p.ExpiresAt) {
				t.Fatalf("child expires %s, parent %s", c.ExpiresAt, p.ExpiresAt)
			}
			bud, _ := c.Raw["budgets"].(map[string]any)
			if bud == nil || bud["requests"] == nil || bud["requests"].(float64) > 10000 || bud["bytes_read"].(float64) > 1<<20 {
				t.Errorf("child budgets %v not within the parent's", c.Raw["budgets"])
			}
			cc := leaseS3(t, srv, c)
			put(t, ownBr, repo, "shared/launch/sub/c.txt", []byte("launch-c"))
			got, _ := get(t, cc, repo, "shared/launch/sub/c.txt")
			wantBytes(t, got, []byte("launch-c"))
			_, _, err := tryGet(cc, repo, "shared/launch/a.txt")
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			_, err = cc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/sub/x"), Body: strings.NewReader("x")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			// The parent sees and may revoke its child.
			pc.ok("lease/get", map[string]any{"lease_id": c.ID})
			// The child cannot see or revoke its parent.
			leaseCtl(t, srv, c).fails("lease/get", map[string]any{"lease_id": p.ID}, http.StatusNotFound, "NotFound")
			leaseCtl(t, srv, c).fails("lease/revoke", map[string]any{"lease_id": p.ID}, http.StatusNotFound, "NotFound")
			pc.revoke(c.ID)
			_, _, err = tryGet(cc, repo, "shared/launch/sub/c.txt")
			wantErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
			got, _ = get(t, ps3, repo, "shared/launch/sub/c.txt")
			wantBytes(t, got, []byte("launch-c"))
		})

		t.Run("WiderRefused", func(t *testing.T) {
			type answer struct {
				name, why string
				status    int
				out       map[string]any
			}
			var answers []answer
			for _, tc := range []struct {
				name string
				args map[string]any
				why  string
			}{
				{"HiddenPath", map[string]any{"paths": []string{"finance/**"}, "actions": []string{"read"}}, "finance"},
				{"ParentPath", map[string]any{"paths": []string{"shared/**"}, "actions": []string{"read"}}, "shared/**"},
				{"Everything", map[string]any{"paths": []string{"**"}, "actions": []string{"list"}}, "**"},
				{"SiblingGlob", map[string]any{"paths": []string{"shared/launch*"}, "actions": []string{"read"}}, "shared/launch*"},
				{"SiblingByQuestionMark", map[string]any{"paths": []string{"shared/launc?/**"}, "actions": []string{"read"}}, "launc?"},
				{"SingleStarAcrossSlash", map[string]any{"paths": []string{"shared/*/**"}, "actions": []string{"read"}}, "shared/*"},
				{"WriteOnReadOnly", map[string]any{"paths": []string{"shared/readonly/**"}, "actions": []string{"write"}}, "write"},
				{"DeleteOnReadOnly", map[string]any{"paths": []string{"shared/readonly/x"}, "actions": []string{"delete"}}, "delete"},
				{"ActionNotHeld", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"propose"}}, "propose"},
				{"RequestBudget", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "budgets": map[string]any{"requests": 20000}}, "requests"},
				{"ReadBudget", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "budgets": map[string]any{"bytes_read": 2 << 20}}, "bytes_read"},
				{"WriteBudget", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"write"}, "budgets": map[string]any{"bytes_written": 2 << 20}}, "bytes_written"},
				{"BranchMain", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "branch": "main"}, "branch"},
				{"OtherBranch", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "branch": "scratch"}, "branch"},
				{"OtherRepo", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "repo": "other"}, "other"},
				{"Sensitivity", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "sensitivity_max": "secret"}, "sensitivity"},
				{"Egress", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "egress": true}, "egress"},
				{"TTLOverMax", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "ttl": "48h"}, "ttl"},
			} {
				st, out := pc.as(t).call("lease/create", tc.args)
				if st == http.StatusOK {
					t.Errorf("%s: a wider child was issued: %v", tc.name, out["lease"])
					continue
				}
				answers = append(answers, answer{tc.name, tc.why, st, out})
			}
			// A refusal is the caller's fault (4xx) and says why.
			t.Run("RefusalsSayWhy", func(t *testing.T) {
				for _, a := range answers {
					e, _ := a.out["error"].(map[string]any)
					msg, _ := e["message"].(string)
					if a.status < 400 || a.status >= 500 || !strings.Contains(msg, a.why) {
						t.Errorf("%s: refused with %d %v, want a 4xx saying %q", a.name, a.status, e, a.why)
					}
				}
			})
			pc.as(t).fails("lease/create", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "fork_from": "main"},
				http.StatusForbidden, "AccessDenied")
			// A longer life is refused or capped at the parent's.
			st, out := pc.as(t).call("lease/create", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "ttl": "20h"})
			if st == http.StatusOK {
				if c := parseLease(t, out); c.ExpiresAt.After(p.ExpiresAt) {
					t.Fatalf("child expires %s after its parent %s", c.ExpiresAt, p.ExpiresAt)
				}
			}
		})

		t.Run("ViaSTS", func(t *testing.T) {
			stc := newSTS(t, srv, staticCreds(p.Creds))
			fromSTS := func(t *testing.T, out *sts.AssumeRoleOutput) *leaseInfo {
				c := out.Credentials
				li := &leaseInfo{Creds: aws.Credentials{AccessKeyID: aws.ToString(c.AccessKeyId), SecretAccessKey: aws.ToString(c.SecretAccessKey),
					SessionToken: aws.ToString(c.SessionToken)}, ExpiresAt: aws.ToTime(c.Expiration)}
				me := leaseCtl(t, srv, li).ok("lease/get", map[string]any{})["lease"].(map[string]any)
				li.ID, li.Branch, li.Run = me["lease_id"].(string), me["branch"].(string), me["run"].(string)
				li.Raw = me
				if li.Branch != p.Branch || li.Run != p.Run || me["parent"] != p.ID || li.ExpiresAt.After(p.ExpiresAt) {
					t.Fatalf("STS child of a lease: %v", me)
				}
				return li
			}
			out, err := stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("child-1")})
			must(t, err)
			c := fromSTS(t, out)
			got, _ := get(t, leaseS3(t, srv, c), repo, "shared/launch/a.txt")
			wantBytes(t, got, []byte("launch-a"))
			// Another role in the ARN does not widen anything.
			oc.as(t).ok("role/put", map[string]any{"name": "wide", "repo": repo, "fork_from": "main",
				"view": []map[string]any{{"path": "**", "actions": []string{"list", "read", "write", "delete"}}}})
			out, err = stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("wide"), RoleSessionName: aws.String("child-2")})
			if err == nil {
				c := fromSTS(t, out)
				_, _, err := tryGet(leaseS3(t, srv, c), repo, "finance/x")
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			}
			// A session policy narrows.
			pol := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::%s"},`+
				`{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::%s/shared/launch/sub/*"}]}`, repo, repo)
			out, err = stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("child-3"), Policy: aws.String(pol)})
			must(t, err)
			nc := leaseS3(t, srv, fromSTS(t, out))
			put(t, ownBr, repo, "shared/launch/sub/d.txt", []byte("launch-d"))
			got, _ = get(t, nc, repo, "shared/launch/sub/d.txt")
			wantBytes(t, got, []byte("launch-d"))
			_, _, err = tryGet(nc, repo, "shared/launch/a.txt")
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, _, err = tryGet(nc, repo, "finance/x")
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			_, err = nc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/sub/x"), Body: strings.NewReader("x")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			// A session policy cannot widen.
			all := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`
			out, err = stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("child-4"), Policy: aws.String(all)})
			must(t, err)
			wc := leaseS3(t, srv, fromSTS(t, out))
			_, _, err = tryGet(wc, repo, "finance/x")
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			_, err = wc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/x"), Body: strings.NewReader("x")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			// Nor outlive the parent.
			_, err = stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("child-5"), DurationSeconds: aws.Int32(7200)})
			wantAPIError(t, err, "ValidationError")
			out, err = stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("child-6"), DurationSeconds: aws.Int32(900)})
			must(t, err)
			if d := time.Until(aws.ToTime(out.Credentials.Expiration)); d > 16*time.Minute {
				t.Fatalf("a 900 s child lives %s", d)
			}
			// A policy for another bucket leaves nothing.
			otherPol := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}]}`
			_, err = stc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("child-7"), Policy: aws.String(otherPol)})
			wantAPIError(t, err, "ValidationError")
		})

		t.Run("RevokingTheParentKillsDescendants", func(t *testing.T) {
			par := oc.as(t).newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h", "view": view})
			child := leaseCtl(t, srv, par).newLease(map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read"}})
			out, err := newSTS(t, srv, staticCreds(child.Creds)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("grandchild")})
			must(t, err)
			grand := &leaseInfo{Creds: aws.Credentials{AccessKeyID: aws.ToString(out.Credentials.AccessKeyId),
				SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey), SessionToken: aws.ToString(out.Credentials.SessionToken)}}
			// Another child minted through STS directly by the parent.
			out, err = newSTS(t, srv, staticCreds(par.Creds)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"), RoleSessionName: aws.String("stschild")})
			must(t, err)
			stsChild := &leaseInfo{Creds: aws.Credentials{AccessKeyID: aws.ToString(out.Credentials.AccessKeyId),
				SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey), SessionToken: aws.ToString(out.Credentials.SessionToken)}}
			descendants := []*leaseInfo{child, grand, stsChild}
			for _, d := range descendants {
				got, _ := get(t, leaseS3(t, srv, d), repo, "shared/launch/a.txt")
				wantBytes(t, got, []byte("launch-a"))
			}
			oc.as(t).revoke(par.ID)
			for i, d := range append([]*leaseInfo{par}, descendants...) {
				_, _, err := tryGet(leaseS3(t, srv, d), repo, "shared/launch/a.txt")
				if err == nil {
					t.Fatalf("lease %d of the revoked family still reads", i)
				}
				wantErr(t, err, http.StatusForbidden, "InvalidAccessKeyId")
				leaseCtl(t, srv, d).fails("lease/get", map[string]any{}, http.StatusForbidden, "Unauthenticated")
				if _, err := newSTS(t, srv, staticCreds(d.Creds)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("agent"),
					RoleSessionName: aws.String("after-revoke")}); err == nil {
					t.Fatalf("lease %d of the revoked family minted a child", i)
				}
			}
		})

		t.Run("CannotHijackAnotherRun", func(t *testing.T) {
			// The owner's role "victim" forks a branch per run; a run
			// continues on its branch when its session is assumed again.
			oc.as(t).ok("role/put", map[string]any{"name": "victim", "repo": repo, "fork_from": "main", "max_ttl": "2h",
				"view": []map[string]any{{"path": "shared/launch/**", "actions": []string{"list", "read", "write"}}}})
			put(t, ps3, repo, "shared/launch/planted", []byte("attacker data"))
			// A lease mints a child naming the victim's role and a run it
			// does not own.
			st, out := pc.as(t).call("lease/create", map[string]any{"role": "victim", "run": "victim-run",
				"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read", "write"}})
			if st == http.StatusOK {
				c := parseLease(t, out)
				if c.Role != p.Role || c.Run != p.Run {
					t.Errorf("a child was issued for role %q run %q (parent: role %q run %q)", c.Role, c.Run, p.Role, p.Run)
				}
			}
			// Later the orchestrator starts run victim-run: it must get its
			// own fork of main, not the attacker's branch.
			vo, err := newSTS(t, srv, staticCreds(owner)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("victim"),
				RoleSessionName: aws.String("victim-run"), DurationSeconds: aws.Int32(900)})
			must(t, err)
			v := &leaseInfo{Creds: aws.Credentials{AccessKeyID: aws.ToString(vo.Credentials.AccessKeyId),
				SecretAccessKey: aws.ToString(vo.Credentials.SecretAccessKey), SessionToken: aws.ToString(vo.Credentials.SessionToken)}}
			me := leaseCtl(t, srv, v).ok("lease/get", map[string]any{})["lease"].(map[string]any)
			if me["branch"] == p.Branch {
				t.Errorf("run victim-run was put on the attacking lease's branch %s", p.Branch)
			}
			_, _, err = tryGet(leaseS3(t, srv, v), repo, "shared/launch/planted")
			if err == nil {
				t.Errorf("run victim-run reads data planted by another run's lease")
			}
		})

		t.Run("CannotForgeProvenance", func(t *testing.T) {
			st, out := pc.as(t).call("lease/create", map[string]any{"on_behalf_of": "ceo@example.com", "principal": nastest.AccessKey,
				"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read", "write"}})
			if st != http.StatusOK {
				return // refused: fine
			}
			c := parseLease(t, out)
			if c.OnBehalfOf != p.OnBehalfOf {
				t.Errorf("a child claims on_behalf_of %q (parent: %q)", c.OnBehalfOf, p.OnBehalfOf)
			}
			if c.Principal != p.Principal {
				t.Errorf("a child claims principal %q (parent: %q)", c.Principal, p.Principal)
			}
			// What it commits carries the claim.
			put(t, leaseS3(t, srv, c), repo, "shared/launch/by-child", []byte("child"))
			cm := leaseCtl(t, srv, c).ok("commit/create", map[string]any{"repo": repo, "branch": c.Branch, "message": "child work"})["commit"].(map[string]any)
			if cm["principal"] == nastest.AccessKey || cm["on_behalf_of"] == "ceo@example.com" {
				t.Errorf("a child's commit claims principal %v on behalf of %v", cm["principal"], cm["on_behalf_of"])
			}
		})
	})
}
