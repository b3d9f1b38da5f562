package source_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/source"
)

// TestRemoteFaults puts a fault-injecting proxy between the gateway and
// the remote: resets mid-body, 5xx, throttling, slow and stalled
// responses, flipped bytes. A read either returns the pinned bytes or an
// error (a clean 503 before the body, or an aborted body after it), and a
// failed fetch records nothing.
func TestRemoteFaults(t *testing.T) {
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	data := map[string][]byte{}
	keys := []string{"reset-once", "reset-always", "err-once", "err-always", "slowdown", "slow-headers", "stall", "corrupt"}
	for i, k := range keys {
		data[k] = randomBytes(uint64(100+i), 3<<20+i*1000)
		rm.put(t, "remote", "f/"+k, data[k])
	}
	fp := startFaultProxy(t, rm.URL)
	gw := startGateway(t, source.Options{HeaderTimeout: 300 * time.Millisecond, StallTimeout: 300 * time.Millisecond})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "f/", "s3://remote/f", fp.URL, nil)
	m := gw.G.Sources.Materializer()

	// failsCleanly: a fetch that fails records nothing, and once the fault
	// is gone the object reads correctly.
	var before int64
	mark := func() { before = m.Stats().FetchedBytes }
	failsCleanly := func(t *testing.T, key string, rng string) {
		t.Helper()
		fp.clear()
		if m.Stats().FetchedBytes != before {
			t.Fatal("a failed fetch recorded bytes")
		}
		if rng != "" {
			_, err := get(t, gw.S3, "data", "f/"+key, rng)
			must(t, err)
		}
		mustGet(t, gw.S3, "data", "f/"+key, data[key])
	}

	t.Run("ResetOnceResumes", func(t *testing.T) {
		g0 := fp.gets.Load()
		fp.inject(fault{resetAt: 1 << 20})
		mustGet(t, gw.S3, "data", "f/reset-once", data["reset-once"])
		if d := fp.gets.Load() - g0; d != 2 {
			t.Fatalf("%d GETs, want 2 (one resumed)", d)
		}
		// The reset drops what the proxy wrote but the gateway had not read
		// yet, so the resume starts at most 1 MiB in, and after the start.
		h := fp.seen()
		var from, to int64
		if n, err := fmt.Sscanf(h[len(h)-1].rng, "bytes=%d-%d", &from, &to); n != 2 || err != nil || from <= 0 || from > 1<<20 || to != 3145727 {
			t.Fatalf("resumed with Range %q", h[len(h)-1].rng)
		}
	})
	t.Run("ResetAlwaysAborts", func(t *testing.T) {
		mark()
		fp.inject(fault{resetAt: 100 << 10, sticky: true})
		got, err := get(t, gw.S3, "data", "f/reset-always", "")
		if err == nil {
			t.Fatalf("a body broken off on every try read as success (%d bytes)", len(got))
		}
		failsCleanly(t, "reset-always", "")
	})
	t.Run("ServerErrorOnceIsRetried", func(t *testing.T) {
		fp.inject(fault{status: 500, code: "InternalError"})
		mustGet(t, gw.S3, "data", "f/err-once", data["err-once"])
	})
	t.Run("ServerErrorsAreServiceUnavailable", func(t *testing.T) {
		mark()
		fp.inject(fault{status: 500, code: "InternalError", sticky: true})
		_, err := get(t, gw.S3, "data", "f/err-always", "")
		wantCode(t, err, http.StatusServiceUnavailable, "ServiceUnavailable")
		failsCleanly(t, "err-always", "")
	})
	t.Run("ThrottlingIsSlowDown", func(t *testing.T) {
		mark()
		fp.inject(fault{status: 503, code: "SlowDown", sticky: true})
		_, err := get(t, gw.S3, "data", "f/slowdown", "bytes=0-9")
		wantCode(t, err, http.StatusServiceUnavailable, "SlowDown")
		failsCleanly(t, "slowdown", "bytes=0-9")
	})
	t.Run("SlowHeadersTimeOut", func(t *testing.T) {
		mark()
		fp.inject(fault{delay: 2 * time.Second, sticky: true})
		start := time.Now()
		_, err := get(t, gw.S3, "data", "f/slow-headers", "")
		wantCode(t, err, http.StatusServiceUnavailable, "ServiceUnavailable")
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v", d)
		}
		failsCleanly(t, "slow-headers", "")
	})
	t.Run("StalledBodyAborts", func(t *testing.T) {
		mark()
		fp.inject(fault{stallAt: 64 << 10, sticky: true})
		if _, err := get(t, gw.S3, "data", "f/stall", ""); err == nil {
			t.Fatal("a stalled body read as success")
		}
		failsCleanly(t, "stall", "")
	})
	t.Run("FlippedByteFailsTheChecksum", func(t *testing.T) {
		mark()
		fp.inject(fault{corrupt: int64(len(data["corrupt"]) - 10)})
		got, err := get(t, gw.S3, "data", "f/corrupt", "")
		if err == nil {
			t.Fatalf("a corrupted transfer read as success (%d bytes, equal prefix %d)", len(got), commonPrefix(got, data["corrupt"]))
		}
		failsCleanly(t, "corrupt", "")
	})
	rep, err := gw.G.Branches.Check(context.Background())
	must(t, err)
	if !rep.OK() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
}

// TestOutage: with the remote down, what was materialised keeps reading,
// metadata keeps working, and the rest fails fast with 503.
func TestOutage(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.put(t, "remote", "o/read", []byte("read before the outage"))
	rm.put(t, "remote", "o/unread", []byte("never read"))
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "o/", "s3://remote/o", rm.URL, nil)
	mustGet(t, gw.S3, "data", "o/read", []byte("read before the outage"))
	gw.owner(t, "branch/create", map[string]any{"repo": "data", "name": "run", "from": "main"})

	rm.down.Store(true)
	mustGet(t, gw.S3, "data_run", "o/read", []byte("read before the outage"))
	start := time.Now()
	_, err := get(t, gw.S3, "data", "o/unread", "")
	wantCode(t, err, http.StatusServiceUnavailable, "ServiceUnavailable")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("an unreachable remote took %v to fail", d)
	}
	if _, err := gw.S3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("o/unread")}); err != nil {
		t.Fatalf("HEAD during the outage: %v", err)
	}
	if keys := listKeys(t, gw.S3, "data", "o/"); len(keys) != 2 {
		t.Fatalf("listing during the outage: %v", keys)
	}
	rm.down.Store(false)
	mustGet(t, gw.S3, "data_run", "o/unread", []byte("never read"))
}
