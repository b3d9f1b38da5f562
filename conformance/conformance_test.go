package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/conformance"
	"github.com/agentnas/nas/fuse"
	"github.com/agentnas/nas/keyspace"
	"github.com/agentnas/nas/kv"
	"github.com/agentnas/nas/nastest"
)

// TestConformance runs the suite against a fresh gateway it owns (so the
// tamper half of L1.6 runs) with a real FUSE mount of each lease (so the
// mount parts of L0.5 and L1.3 run), and checks every L0 and L1 test
// passes. Where this host cannot mount, L0.5 and L1.3 are known failures
// with a declared deviation.
func TestConformance(t *testing.T) {
	srv := nastest.Start(t)
	target := conformance.Target{
		Endpoint: srv.Endpoint, Owner: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey},
		Tamper: conformance.TamperFirstRecord(srv.Gateway.DB), Implementation: "agentnas", Version: "test",
		Mount: mountLease(t),
	}
	known := map[string]bool{}
	if why := noFUSE(); why != "" {
		target.Mount, target.MountMissing = nil, why
		known["L0.5"], known["L1.3"] = true, true // the mount views
		t.Logf("without the mount parts: %s", why)
	}
	rep := conformance.Run(context.Background(), target)
	for id, res := range rep.Tests {
		if res != "pass" && !known[id] {
			t.Errorf("%s: %s (%s)", id, res, rep.Details[id])
		}
		if res != "pass" && !rep.Declared(id) {
			t.Errorf("%s fails without a declared deviation", id)
		}
	}
	if len(rep.Tests) != 22 {
		t.Fatalf("%d tests run, want 22", len(rep.Tests))
	}
	if len(known) == 0 && rep.Level != "L3" {
		t.Errorf("level %s, want L3", rep.Level)
	}
	t.Logf("level %s, deviations %v", rep.Level, rep.Deviations)
	checkKeySpaces(t, srv.Gateway.DB)
}

// checkKeySpaces checks that every key the run left in kv lies in a
// registered key space, so the registry is complete.
func checkKeySpaces(t *testing.T, db kv.DB) {
	t.Helper()
	seen := map[string]int{}
	err := db.View(context.Background(), func(r kv.Reader) error {
		return r.Scan(kv.Range{}, func(k, _ []byte) error {
			for _, s := range keyspace.All {
				if bytes.HasPrefix(k, []byte(s.Prefix)) {
					seen[s.Prefix]++
					return nil
				}
			}
			t.Errorf("key %q lies in no registered key space (package keyspace)", k)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keys per space: %v", seen)
}

// TestConformanceWithoutMount: a runner given no mount still runs every
// test, and L0.5 and L1.3 say, as a deviation, that the mount was not
// exercised and why.
func TestConformanceWithoutMount(t *testing.T) {
	srv := nastest.Start(t)
	rep := conformance.Run(context.Background(), conformance.Target{
		Endpoint: srv.Endpoint, Owner: aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey},
		MountMissing: "no FUSE in this test", Implementation: "agentnas", Version: "test",
	})
	for _, id := range []string{"L0.5", "L1.3"} {
		if rep.Tests[id] != "fail" || !rep.Declared(id) {
			t.Errorf("%s without a mount: %s, declared %v (%s)", id, rep.Tests[id], rep.Declared(id), rep.Details[id])
		}
	}
	found := false
	for _, d := range rep.Deviations {
		if d == "L0.5: the mount view was not exercised by this run (no FUSE in this test)" {
			found = true
		}
	}
	if !found {
		t.Errorf("deviations %v do not say why the mount was not exercised", rep.Deviations)
	}
}

// noFUSE says why this host cannot mount ("" when it can).
func noFUSE() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse"
	}
	if os.Geteuid() != 0 {
		if _, err := os.Stat("/bin/fusermount3"); err != nil {
			return "not root and no fusermount3"
		}
	}
	return ""
}

// mountLease is Target.Mount with package fuse: the lease's branch in a
// temporary directory, with the lease's credentials.
func mountLease(t *testing.T) func(ctx context.Context, leaseJSON []byte) (string, func(), error) {
	return func(ctx context.Context, leaseJSON []byte) (string, func(), error) {
		var lf client.LeaseFile
		if err := json.Unmarshal(leaseJSON, &lf); err != nil || lf.AccessKeyID == "" {
			return "", nil, fmt.Errorf("not a lease with credentials: %w", err)
		}
		c := client.New(client.Config{Endpoint: lf.Endpoint, Attempts: 2,
			Credentials: aws.Credentials{AccessKeyID: lf.AccessKeyID, SecretAccessKey: lf.SecretAccessKey, SessionToken: lf.SessionToken}})
		tmp := t.TempDir()
		dir := filepath.Join(tmp, "mnt")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", nil, err
		}
		m, err := fuse.New(ctx, dir, fuse.Options{Client: c, Repo: lf.Repo, Branch: lf.Branch, CacheDir: filepath.Join(tmp, "cache"),
			CommitAfter: -1, TTL: 250 * time.Millisecond})
		if err != nil {
			return "", nil, err
		}
		return dir, func() {
			uctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := m.Unmount(uctx); err != nil {
				t.Logf("unmount %s: %v", dir, err)
			}
		}, nil
	}
}
