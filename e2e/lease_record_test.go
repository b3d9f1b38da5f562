package e2e_test

import (
	"context"
	"encoding/binary"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/nastest"
)

// Section 9: the flight recorder records denials and deletes, verifies its
// chain, detects tampering, and nothing consequential happens when it
// cannot record.

// records lists flight-recorder events as the owner.
func records(c *ctl, args map[string]any) []map[string]any {
	c.t.Helper()
	var out []map[string]any
	for _, r := range c.ok("record/list", args)["records"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

func field(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

// kvGet and kvSet reach the gateway's store directly (tampering).
func kvGet(t testing.TB, srv *nastest.Server, key []byte) []byte {
	t.Helper()
	var v []byte
	must(t, srv.Gateway.DB.View(context.Background(), func(r kv.Reader) error {
		b, err := r.Get(key)
		v = append([]byte(nil), b...)
		return err
	}))
	return v
}

func kvSet(t testing.TB, srv *nastest.Server, key, val []byte) {
	t.Helper()
	must(t, srv.Gateway.DB.Update(context.Background(), func(txn kv.Txn) error { return txn.Set(key, val) }))
}

func eventKey(seq uint64) []byte { return binary.BigEndian.AppendUint64([]byte("F/e"), seq) }

func TestLeaseFlightRecorder(t *testing.T) {
	ctx := context.Background()
	t.Parallel()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "rec"
	createBucket(t, own, repo)
	for _, k := range []string{"shared/launch/a.txt", "shared/launch/keep.txt", "finance/x", "shared/launch/copy-src.txt", "shared/launch/upc-src.txt"} {
		put(t, own, repo, k, []byte("content of "+k))
	}
	oc.commit(repo, "main", "seed")
	view := []map[string]any{
		{"path": "shared/launch/**", "actions": []string{"list", "read", "write", "delete"}},
		{"path": "shared/readonly/**", "actions": []string{"list", "read"}},
	}
	li := oc.newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h", "purpose": "recorder test", "view": view})
	lc := leaseS3(t, srv, li)
	ownBr := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}})

	t.Run("DenialsAreRecordedWithTheRule", func(t *testing.T) {
		_, _, err := tryGet(lc, repo, "finance/x")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		_, err = lc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/x"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, _, err = tryGet(lc, alias(repo, "main"), "shared/launch/a.txt")
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		evs := records(oc.as(t), map[string]any{"lease": li.ID, "kinds": []string{"denied"}})
		find := func(path, effect string) map[string]any {
			for _, e := range evs {
				if field(e, "subject", "path") == path && field(e, "decision", "effect") == effect {
					return e
				}
			}
			t.Fatalf("no %s denial of %q among %v", effect, path, evs)
			return nil
		}
		for _, e := range []map[string]any{find("finance/x", "not_found"), find("shared/readonly/x", "deny"), find("shared/launch/a.txt", "not_found")} {
			if field(e, "decision", "rule") == "" || field(e, "run") != li.Run || field(e, "lease") != li.ID || field(e, "repo") != repo ||
				field(e, "purpose") != "recorder test" {
				t.Errorf("denial record lacks its rule or provenance: %v", e)
			}
		}
		if e := find("shared/readonly/x", "deny"); field(e, "details", "action") != "write" || !strings.Contains(field(e, "decision", "rule"), "write") {
			t.Errorf("write denial: %v", e)
		}
		// The lease itself cannot read the record.
		leaseCtl(t, srv, li).fails("record/list", map[string]any{"lease": li.ID}, http.StatusForbidden, "AccessDenied")
	})

	t.Run("OverBudgetRefusalsAreRecorded", func(t *testing.T) {
		b := oc.as(t).newLease(map[string]any{"repo": repo, "role": "agent", "branch": li.Branch, "ttl": "1h", "view": view,
			"budgets": map[string]any{"requests": 1}})
		bc := leaseS3(t, srv, b, noChecksumValidation)
		get(t, bc, repo, "shared/launch/a.txt")
		_, _, err := tryGet(bc, repo, "shared/launch/a.txt")
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		for _, e := range records(oc.as(t), map[string]any{"lease": b.ID}) {
			if field(e, "decision", "effect") == "over_budget" {
				return
			}
		}
		t.Errorf("a request refused for its budget left no record")
	})

	t.Run("DeletesAreRecorded", func(t *testing.T) {
		put(t, lc, repo, "shared/launch/gone.txt", []byte("gone"))
		_, err := lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/gone.txt")})
		must(t, err)
		found := false
		for _, e := range records(oc.as(t), map[string]any{"lease": li.ID, "kinds": []string{"delete"}}) {
			if field(e, "subject", "path") == "shared/launch/gone.txt" && field(e, "branch") == li.Branch && field(e, "run") == li.Run {
				found = true
			}
		}
		if !found {
			t.Fatal("the lease's delete is not recorded")
		}
		out := oc.as(t).ok("record/verify", map[string]any{})
		if out["ok"] != true {
			t.Fatalf("record/verify: %v", out)
		}
	})

	t.Run("ReadManifestCoversEveryRead", func(t *testing.T) {
		get(t, lc, repo, "shared/launch/a.txt")
		_, err := lc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/copy-dst.txt"),
			CopySource: aws.String(repo + "/shared/launch/copy-src.txt")})
		must(t, err)
		up, err := lc.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/upc-dst")})
		must(t, err)
		_, err = lc.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/upc-dst"), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), CopySource: aws.String(repo + "/shared/launch/upc-src.txt"), CopySourceRange: aws.String("bytes=0-3")})
		must(t, err)
		id := leaseCtl(t, srv, li).commit(repo, li.Branch, "work after reading")
		ex := oc.as(t).ok("record/explain", map[string]any{"repo": repo, "commit": id})["explanation"].(map[string]any)
		rm, _ := ex["read_manifest"].(map[string]any)
		var paths []string
		if rm != nil {
			for _, r := range rm["reads"].([]any) {
				paths = append(paths, r.(map[string]any)["path"].(string))
			}
		}
		if !slices.Contains(paths, "shared/launch/a.txt") {
			t.Fatalf("the read manifest misses a GET: %q (%v)", paths, ex)
		}
		t.Run("UploadPartCopySource", func(t *testing.T) {
			// The part's ETag is the MD5 of the bytes read: a read.
			if !slices.Contains(paths, "shared/launch/upc-src.txt") {
				t.Errorf("the read manifest misses the UploadPartCopy source: %q", paths)
			}
		})
		t.Run("CopySource", func(t *testing.T) {
			if !slices.Contains(paths, "shared/launch/copy-src.txt") {
				t.Errorf("the read manifest misses the CopyObject source: %q", paths)
			}
		})
	})

	t.Run("RecordFirstThenAct", func(t *testing.T) {
		// Make every append fail: the chain head no longer decodes.
		head := kvGet(t, srv, []byte("F/h"))
		kvSet(t, srv, []byte("F/h"), []byte("corrupt"))
		restored := false
		restore := func() {
			if !restored {
				kvSet(t, srv, []byte("F/h"), head)
				restored = true
			}
		}
		defer restore()
		oc := oc.as(t)
		put(t, ownBr, repo, "shared/launch/lkeep.txt", []byte("lease keep"))
		mainHead := oc.ok("branch/get", map[string]any{"repo": repo, "name": "main"})["branch"].(map[string]any)["head"]
		brHead := oc.ok("branch/get", map[string]any{"repo": repo, "name": li.Branch})["branch"].(map[string]any)["head"]

		_, err := own.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/keep.txt")})
		wantErr(t, err, http.StatusServiceUnavailable, "ServiceUnavailable")
		out, err := own.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(repo),
			Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("shared/launch/keep.txt")}, {Key: aws.String("finance/x")}}}})
		if err == nil && (len(out.Deleted) != 0 || len(out.Errors) != 2) {
			t.Errorf("DeleteObjects without a recorder: deleted %d, errors %d", len(out.Deleted), len(out.Errors))
		}
		_, err = lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/lkeep.txt")})
		wantErr(t, err, http.StatusServiceUnavailable, "ServiceUnavailable")
		put(t, own, repo, "shared/launch/staged.txt", []byte("staged"))
		oc.fails("commit/create", map[string]any{"repo": repo, "branch": "main", "message": "unrecorded"}, http.StatusServiceUnavailable, "RecorderUnavailable")
		leaseCtl(t, srv, li).fails("commit/create", map[string]any{"repo": repo, "branch": li.Branch, "message": "unrecorded"},
			http.StatusServiceUnavailable, "RecorderUnavailable")
		oc.fails("lease/revoke", map[string]any{"lease_id": li.ID}, http.StatusServiceUnavailable, "RecorderUnavailable")
		if st, out := oc.call("lease/create", map[string]any{"repo": repo, "role": "agent", "branch": li.Branch, "ttl": "1h", "view": view}); st == http.StatusOK {
			// Issued but unrecorded: it must not be usable.
			n := parseLease(t, out)
			if _, _, err := tryGet(leaseS3(t, srv, n), repo, "shared/launch/a.txt"); err == nil {
				t.Error("an unrecorded lease works")
			}
		}
		oc.fails("branch/create", map[string]any{"repo": repo, "name": "unrecorded", "from": "main"}, http.StatusServiceUnavailable, "RecorderUnavailable")
		oc.fails("share/grant", map[string]any{"lease_id": li.ID, "path": "finance/**", "actions": []string{"read"}}, http.StatusServiceUnavailable, "RecorderUnavailable")
		oc.ok("role/put", map[string]any{"name": "unrec", "repo": repo, "fork_from": "main",
			"view": []map[string]any{{"path": "shared/**", "actions": []string{"read"}}}})
		if ao, err := newSTS(t, srv, staticCreds(owner)).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: roleArn("unrec"), RoleSessionName: aws.String("unrec-1")}); err == nil {
			if _, _, err := tryGet(credsS3(t, srv, credsOf(ao)), repo, "shared/launch/a.txt"); err == nil {
				t.Error("an unrecorded STS lease works")
			}
		}

		// Nothing changed.
		restore()
		for _, k := range []string{"shared/launch/keep.txt", "finance/x"} {
			got, _ := get(t, own, repo, k)
			wantBytes(t, got, []byte("content of "+k))
		}
		ownerHas(t, own, repo, li.Branch, "shared/launch/lkeep.txt", []byte("lease keep"))
		if h := oc.ok("branch/get", map[string]any{"repo": repo, "name": "main"})["branch"].(map[string]any)["head"]; h != mainHead {
			t.Errorf("main moved without a record: %v -> %v", mainHead, h)
		}
		if h := oc.ok("branch/get", map[string]any{"repo": repo, "name": li.Branch})["branch"].(map[string]any)["head"]; h != brHead {
			t.Errorf("the lease's branch moved without a record: %v -> %v", brHead, h)
		}
		for _, b := range oc.ok("branch/list", map[string]any{"repo": repo})["branches"].([]any) {
			if n := b.(map[string]any)["name"].(string); n == "unrecorded" || strings.HasPrefix(n, "unrec/") {
				t.Errorf("branch %s created without a record", n)
			}
		}
		got, _ := get(t, lc, repo, "shared/launch/a.txt") // not revoked
		wantBytes(t, got, []byte("content of shared/launch/a.txt"))
		_, _, err = tryGet(lc, repo, "finance/x") // no grant
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		if out := oc.ok("record/verify", map[string]any{}); out["ok"] != true {
			t.Fatalf("record/verify after the outage: %v", out)
		}
		// With the recorder back, the same operations work.
		_, err = own.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/keep.txt")})
		must(t, err)
		oc.commit(repo, "main", "recorded")
	})

	t.Run("TamperingIsDetected", func(t *testing.T) {
		oc := oc.as(t)
		if out := oc.ok("record/verify", map[string]any{}); out["ok"] != true {
			t.Fatalf("record/verify before tampering: %v", out)
		}
		// One byte of one record, in place.
		const seq = 3
		v := kvGet(t, srv, eventKey(seq))
		v[len(v)/2] ^= 0x01
		kvSet(t, srv, eventKey(seq), v)
		out := oc.ok("record/verify", map[string]any{})
		if out["ok"] != false {
			t.Fatalf("record/verify after editing record %d: %v", seq, out)
		}
		if ps, _ := out["problems"].([]any); len(ps) == 0 {
			t.Fatalf("record/verify reports no problem: %v", out)
		}
		// Removing a record is found as well.
		v[len(v)/2] ^= 0x01
		kvSet(t, srv, eventKey(seq), v)
		if out := oc.ok("record/verify", map[string]any{}); out["ok"] != true {
			t.Fatalf("record/verify after undoing the edit: %v", out)
		}
		must(t, srv.Gateway.DB.Update(ctx, func(txn kv.Txn) error { return txn.Delete(eventKey(seq + 1)) }))
		if out := oc.ok("record/verify", map[string]any{}); out["ok"] != false {
			t.Fatalf("record/verify after deleting record %d: %v", seq+1, out)
		}
	})
}
