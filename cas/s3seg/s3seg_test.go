package s3seg_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/cas/s3seg"
	"github.com/agentnas/nas/nastest"
)

// bucket starts a gateway with a bucket "segs" and returns a Store on
// its prefix p/.
func bucket(t *testing.T) (*s3seg.Store, *nastest.Server) {
	t.Helper()
	srv := nastest.Start(t)
	if _, err := srv.Gateway.Branches.CreateRepo(context.Background(), "segs", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := s3seg.Open(s3seg.Config{URL: "s3://segs/p", Endpoint: srv.Endpoint, AccessKey: nastest.AccessKey, SecretKey: nastest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, srv
}

func data(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestStore puts a small segment and one past the multipart threshold,
// reads ranges of both (the last byte, past the end), lists and deletes.
func TestStore(t *testing.T) {
	st, _ := bucket(t)
	ctx := context.Background()
	small, large := data(1, 300<<10), data(2, 65<<20+123)
	for name, b := range map[string][]byte{"ab/small.seg": small, "cd/large.seg": large} {
		if err := st.Put(ctx, name, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatalf("put %s: %v", name, err)
		}
	}
	for name, b := range map[string][]byte{"ab/small.seg": small, "cd/large.seg": large} {
		r := st.Open(ctx, name)
		for _, off := range []int{0, 1, len(b) / 2, len(b) - 10} {
			p := make([]byte, 10)
			if n, err := r.ReadAt(p, int64(off)); n != 10 || err != nil || !bytes.Equal(p, b[off:off+10]) {
				t.Fatalf("%s at %d: %d %v", name, off, n, err)
			}
		}
		p := make([]byte, 20)
		if n, err := r.ReadAt(p, int64(len(b)-10)); n != 10 || err != io.EOF {
			t.Fatalf("%s past its end: %d %v, want 10 and EOF", name, n, err)
		}
	}
	var names []string
	err := st.List(ctx, func(name string, size int64, mod time.Time) error {
		names = append(names, name)
		if mod.IsZero() || (name == "cd/large.seg" && size != int64(len(large))) {
			t.Errorf("listed %s: %d bytes at %v", name, size, mod)
		}
		return nil
	})
	if err != nil || strings.Join(names, ",") != "ab/small.seg,cd/large.seg" {
		t.Fatalf("list: %v %v", names, err)
	}
	if err := st.Delete(ctx, "ab/small.seg"); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "ab/small.seg"); err != nil {
		t.Fatalf("deleting a missing segment: %v", err)
	}
	if _, err := st.Open(ctx, "ab/small.seg").ReadAt(make([]byte, 4), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a deleted segment: %v, want fs.ErrNotExist", err)
	}
}

// TestOpenRefuses: a malformed URL and missing keys are refused before
// any request; a bucket that does not answer fails Check.
func TestOpenRefuses(t *testing.T) {
	for _, u := range []string{"", "s3:/b", "http://b/p", "s3://", "s3://b/p?x=1", "s3://b/p#f"} {
		if _, err := s3seg.Open(s3seg.Config{URL: u, AccessKey: "a", SecretKey: "s"}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
	if _, err := s3seg.Open(s3seg.Config{URL: "s3://b"}); err == nil {
		t.Error("no keys accepted")
	}
	st, err := s3seg.Open(s3seg.Config{URL: "s3://b/p", Endpoint: "http://127.0.0.1:1", AccessKey: "a", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := st.Check(ctx); err == nil {
		t.Fatal("Check of a bucket nobody serves passed")
	}
}

// FuzzOpen feeds arbitrary URLs to Open: it refuses or accepts, never
// panics, and an accepted one is an s3:// URL with a bucket.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{"s3://b", "s3://b/p/", "s3://b/../x", "s3://%zz", "s3://b/p?q", "s3://:0/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		if _, err := s3seg.Open(s3seg.Config{URL: u, AccessKey: "a", SecretKey: "s"}); err == nil && !strings.HasPrefix(u, "s3://") {
			t.Fatalf("accepted %q", u)
		}
	})
}
