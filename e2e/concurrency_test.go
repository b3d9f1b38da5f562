package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/nastest"
)

func TestConcurrentOverwrite(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	const b = "race"
	createBucket(t, c, b)
	// A few rounds, each on a new key: one round alone does not always
	// collide under -race.
	for round := range 3 {
		t.Run(fmt.Sprint("round", round), func(t *testing.T) { contend(t, c, b, fmt.Sprint("contended-", round)) })
	}
}

// contend has 16 writers PUT different bodies to key at once while readers
// GET it, then checks that exactly one complete body won.
func contend(t *testing.T, c *s3.Client, b, key string) {
	ctx := context.Background()
	const writers = 16
	bodies := make([][]byte, writers)
	etags := make(map[string]int, writers)
	for i := range bodies {
		bodies[i] = randBytes(fmt.Sprintf("%s-writer-%d", key, i), 256<<10+i)
		etags[etagOf(bodies[i])] = i
	}
	put(t, c, b, key, []byte("seed"))

	// Readers run during the writes: every GET must return one complete
	// body, never a mix or a torn one.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var readErrs sync.Map
	for r := range 4 {
		readers.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				got, out, err := tryGet(c, b, key)
				if err != nil {
					readErrs.Store(fmt.Sprintf("reader %d/%d", r, n), err.Error())
					continue
				}
				if string(got) == "seed" {
					continue
				}
				i, ok := etags[aws.ToString(out.ETag)]
				if !ok || !bytes.Equal(got, bodies[i]) {
					readErrs.Store(fmt.Sprintf("reader %d/%d", r, n), fmt.Sprintf("torn read: %d bytes, etag %s", len(got), aws.ToString(out.ETag)))
				}
			}
		})
	}

	var wg sync.WaitGroup
	versions := make([]string, writers) // "" for a writer that failed
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: bytes.NewReader(bodies[i])})
			if err != nil {
				// S3 has no conflicts between unconditional PUTs: the
				// last writer wins and every writer gets 200.
				t.Errorf("writer %d: %v", i, err)
				return
			}
			if aws.ToString(out.ETag) != etagOf(bodies[i]) {
				t.Errorf("writer %d: ETag %s, want %s", i, aws.ToString(out.ETag), etagOf(bodies[i]))
			}
			versions[i] = aws.ToString(out.VersionId)
		})
	}
	close(start)
	wg.Wait()
	close(stop)
	readers.Wait()
	readErrs.Range(func(k, v any) bool {
		t.Errorf("%s: %s", k, v)
		return true
	})

	got, out := get(t, c, b, key)
	winner, ok := etags[aws.ToString(out.ETag)]
	if !ok || versions[winner] == "" {
		t.Fatalf("final ETag %s matches no successful writer", aws.ToString(out.ETag))
	}
	wantBytes(t, got, bodies[winner])
	if aws.ToString(out.VersionId) != versions[winner] {
		t.Errorf("final version %s, but writer %d got %s", aws.ToString(out.VersionId), winner, versions[winner])
	}
	h, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
	must(t, err)
	if aws.ToString(h.ETag) != etagOf(bodies[winner]) || aws.ToInt64(h.ContentLength) != int64(len(bodies[winner])) {
		t.Errorf("HEAD disagrees with GET: %s %d", aws.ToString(h.ETag), aws.ToInt64(h.ContentLength))
	}
	// Every write is a version, and the winner is the latest.
	lv, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b), Prefix: aws.String(key)})
	must(t, err)
	var listed []string
	for _, v := range lv.Versions {
		listed = append(listed, aws.ToString(v.VersionId))
		if aws.ToBool(v.IsLatest) != (aws.ToString(v.VersionId) == versions[winner]) {
			t.Errorf("version %s IsLatest %v (winner %s)", aws.ToString(v.VersionId), aws.ToBool(v.IsLatest), versions[winner])
		}
	}
	succeeded := 0
	for _, v := range versions {
		if v == "" {
			continue
		}
		succeeded++
		if !slices.Contains(listed, v) {
			t.Errorf("version %s is not listed", v)
		}
	}
	if len(listed) != succeeded+1 {
		t.Errorf("%d versions listed, want %d", len(listed), succeeded+1)
	}
	// And each is readable with its own bytes.
	for i, v := range versions {
		if v == "" {
			continue
		}
		got, _, err := tryGet(c, b, key, func(in *s3.GetObjectInput) { in.VersionId = aws.String(v) })
		must(t, err)
		wantBytes(t, got, bodies[i])
	}
}

func TestReadAfterWrite(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	mc := newMinio(t, srv)
	ctx := context.Background()
	const b = "raw"
	createBucket(t, c, b)

	t.Run("Overwrite", func(t *testing.T) {
		for i := range 40 {
			body := []byte(fmt.Sprintf("generation %d", i))
			if i%2 == 0 {
				put(t, c, b, "k", body)
			} else {
				_, err := mc.PutObject(ctx, b, "k", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
				must(t, err)
			}
			got, _ := get(t, c, b, "k")
			if !bytes.Equal(got, body) {
				t.Fatalf("write %d then read: %q", i, got)
			}
			if keys := listAll(t, c, b, "k"); !slices.Equal(keys, []string{"k"}) {
				t.Fatalf("write %d then list: %v", i, keys)
			}
		}
	})
	t.Run("DeleteThenRead", func(t *testing.T) {
		for i := range 10 {
			key := fmt.Sprintf("d%d", i)
			put(t, c, b, key, []byte("x"))
			_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String(key)})
			must(t, err)
			_, _, err = tryGet(c, b, key)
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			if keys := listAll(t, c, b, key); len(keys) != 0 {
				t.Fatalf("deleted key still listed: %v", keys)
			}
		}
	})
}

// TestWritesDuringCommits commits repeatedly while writers run: a commit
// must neither block nor lose a concurrent write.
func TestWritesDuringCommits(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "busy"
	createBucket(t, c, b)
	writers, per := 8, 25
	if testing.Short() {
		writers, per = 4, 10
	}
	done := make(chan struct{})
	var commits sync.WaitGroup
	var ncommits int
	commits.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			time.Sleep(20 * time.Millisecond)
			_, err := srv.Gateway.Branches.Commit(ctx, b, "main", branch.CommitOptions{Message: "tick"})
			if err == nil {
				ncommits++
			} else if !errors.Is(err, branch.ErrNothingToCommit) {
				t.Errorf("commit: %v", err)
				return
			}
		}
	})
	g, gctx := errgroup.WithContext(ctx)
	var want []string
	for w := range writers {
		for i := range per {
			want = append(want, fmt.Sprintf("w%d/%03d", w, i))
		}
		g.Go(func() error {
			for i := range per {
				key := fmt.Sprintf("w%d/%03d", w, i)
				if _, err := c.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(key), Body: strings.NewReader(key)}); err != nil {
					return fmt.Errorf("%s: %w", key, err)
				}
				if i%5 == 4 { // and overwrite an earlier one
					prev := fmt.Sprintf("w%d/%03d", w, i-2)
					if _, err := c.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(prev), Body: strings.NewReader(prev + "!")}); err != nil {
						return fmt.Errorf("%s: %w", prev, err)
					}
				}
			}
			return nil
		})
	}
	err := g.Wait()
	close(done)
	commits.Wait()
	must(t, err)
	if ncommits == 0 {
		t.Log("no commit overlapped the writes")
	}
	// Fold whatever the ticker left staged, then read it all from the tree.
	_, err = srv.Gateway.Branches.Commit(ctx, b, "main", branch.CommitOptions{Message: "final", AllowEmpty: true})
	must(t, err)
	slices.Sort(want)
	if got := listAll(t, c, b, ""); !slices.Equal(got, want) {
		t.Fatalf("listed %d keys, want %d", len(got), len(want))
	}
	for _, k := range want {
		got, _ := get(t, c, b, k)
		i := 0
		fmt.Sscanf(k[strings.IndexByte(k, '/')+1:], "%d", &i)
		exp := k
		if i%5 == 2 && i+2 < per {
			exp = k + "!"
		}
		if string(got) != exp {
			t.Errorf("%s = %q, want %q", k, got, exp)
		}
	}
}
