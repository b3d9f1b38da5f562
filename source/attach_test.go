package source_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/source"
)

// listKeys lists every key of bucket under prefix with their ETags.
func listKeys(t testing.TB, cl *s3.Client, bucket, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := s3.NewListObjectsV2Paginator(cl, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		must(t, err)
		for _, o := range page.Contents {
			out[aws.ToString(o.Key)] = aws.ToString(o.ETag)
		}
	}
	return out
}

func TestAttachTransfersNoBytes(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	want := map[string][]byte{}
	for i := range 250 {
		k := fmt.Sprintf("set/%03d/obj-%d.bin", i%7, i)
		want[k] = randomBytes(uint64(i), 100+i*13)
		rm.put(t, "remote", k, want[k])
	}
	rm.put(t, "remote", "elsewhere/x", []byte("not under the prefix"))
	gw := startGateway(t, source.Options{CommitEvery: 100})
	gw.mkRepo(t, "data")
	getsBefore := rm.gets.Load()
	info := gw.attach(t, "data", "ds/", "s3://remote/set", rm.URL, nil)
	if got := rm.gets.Load() - getsBefore; got != 0 {
		t.Fatalf("attach made %d object GETs, want 0", got)
	}
	if info["state"] != "ready" || info["added"].(float64) != 250 || info["commits"].(float64) != 3 {
		t.Fatalf("attach: %v", info)
	}
	if _, ok := info["secret_key"]; ok {
		t.Fatal("source info carries the secret key")
	}
	keys := listKeys(t, gw.S3, "data", "ds/")
	if len(keys) != 250 {
		t.Fatalf("listed %d keys, want 250", len(keys))
	}
	for k := range want {
		if _, ok := keys["ds/"+k[len("set/"):]]; !ok {
			t.Fatalf("key %s missing from the listing", k)
		}
	}
	// HEAD answers from the entry.
	k := "set/003/obj-3.bin"
	h, err := gw.S3.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("data"), Key: aws.String("ds/003/obj-3.bin")})
	must(t, err)
	if aws.ToInt64(h.ContentLength) != int64(len(want[k])) {
		t.Fatalf("HEAD size %d, want %d", aws.ToInt64(h.ContentLength), len(want[k]))
	}
	if got := rm.gets.Load() - getsBefore; got != 0 {
		t.Fatalf("listing and HEAD made %d object GETs", got)
	}
	// fsck understands lazy entries.
	rep, err := gw.G.Branches.Check(context.Background())
	must(t, err)
	if !rep.OK() || rep.Lazy < 250 {
		t.Fatalf("fsck: lazy %d, problems %v", rep.Lazy, rep.Problems)
	}
	// The log names the source on each page's commit.
	out := gw.owner(t, "commit/log", map[string]any{"repo": "data", "ref": "main", "limit": 5})
	msgs := []string{}
	for _, c := range out["commits"].([]any) {
		msgs = append(msgs, c.(map[string]any)["message"].(string))
	}
	if !slices.ContainsFunc(msgs, func(m string) bool {
		return m == fmt.Sprintf("attach source %s (s3://remote/set/) at \"ds/\", page 3", info["id"])
	}) {
		t.Fatalf("log: %q", msgs)
	}
}

func TestFirstReadIsSharedByForks(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	small := randomBytes(1, 5000)
	mid := randomBytes(2, 3<<20)
	rm.put(t, "remote", "a/small.txt", small)
	rm.put(t, "remote", "a/mid.bin", mid)
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "ds/", "s3://remote/a/", rm.URL, nil)
	for _, b := range []string{"fork-a", "fork-b"} {
		gw.owner(t, "branch/create", map[string]any{"repo": "data", "name": b, "from": "main"})
	}

	g0 := rm.gets.Load()
	mustGet(t, gw.S3, "data_fork-a", "ds/small.txt", small)
	if d := rm.gets.Load() - g0; d != 1 {
		t.Fatalf("first read made %d remote GETs, want 1", d)
	}
	mustGet(t, gw.S3, "data_fork-b", "ds/small.txt", small)
	mustGet(t, gw.S3, "data", "ds/small.txt", small)
	if d := rm.gets.Load() - g0; d != 1 {
		t.Fatalf("reads on the other fork and main made %d more remote GETs", d-1)
	}

	// Concurrent first readers share one fetch.
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := []string{"data", "data_fork-a", "data_fork-b"}[i%3]
			got, err := get(t, gw.S3, b, "ds/mid.bin", "")
			if err != nil || len(got) != len(mid) || string(got) != string(mid) {
				t.Errorf("concurrent read %d from %s: %d bytes, %v", i, b, len(got), err)
			}
		}()
	}
	wg.Wait()
	if d := rm.gets.Load() - g0; d != 2 {
		t.Fatalf("six concurrent first readers made %d remote GETs, want 1", d-1)
	}

	// Copies, writes and deletes on a branch never touch the remote.
	r0 := rm.reqs.Load()
	_, err := gw.S3.CopyObject(context.Background(), &s3.CopyObjectInput{Bucket: aws.String("data_fork-a"), Key: aws.String("copies/mid.bin"),
		CopySource: aws.String("data_fork-a/ds/mid.bin")})
	must(t, err)
	putObject(t, gw.S3, "data_fork-a", "ds/small.txt", nil)
	_, err = gw.S3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("data_fork-b"), Key: aws.String("ds/mid.bin")})
	must(t, err)
	mustGet(t, gw.S3, "data_fork-a", "copies/mid.bin", mid)
	mustGet(t, gw.S3, "data_fork-a", "ds/small.txt", nil)
	if d := rm.reqs.Load() - r0; d != 0 {
		t.Fatalf("copy, overwrite, delete and reading the copy sent %d requests to the remote", d)
	}
	if _, err := get(t, gw.S3, "data_fork-b", "ds/mid.bin", ""); err == nil {
		t.Fatal("deleted key still readable on fork-b")
	}
	mustGet(t, gw.S3, "data", "ds/mid.bin", mid)

	// The side index is a GC root: a collection keeps what was fetched.
	ctx := context.Background()
	_, err = gw.G.Branches.Collect(ctx, branchGCNow())
	must(t, err)
	mustGet(t, gw.S3, "data_fork-b", "ds/small.txt", small)
	if d := rm.gets.Load() - g0; d != 2 {
		t.Fatalf("reads after GC went to the remote (%d GETs)", d)
	}
	rep, err := gw.G.Branches.Check(ctx)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
	st := gw.G.Sources.Materializer().Stats()
	if st.FetchedBytes != int64(len(small)+len(mid)) {
		t.Fatalf("fetched %d bytes, want %d", st.FetchedBytes, len(small)+len(mid))
	}
	// Each block was fetched once; every later read found it local.
	if st.RemoteBlocks < 2 || st.LocalBlocks < st.RemoteBlocks {
		t.Fatalf("blocks: %d local, %d remote", st.LocalBlocks, st.RemoteBlocks)
	}
	_ = http.StatusOK
}
