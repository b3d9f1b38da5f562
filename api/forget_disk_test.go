package api_test

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/cas/castest"
)

// TestForgetLeavesNoByteOnDisk: after a forget through the real server, no
// file under the gateway's data directory holds a byte of any version of
// the forgotten file, whether it was uploaded (two versions, one kept by
// a checkpoint) or attached lazily from a folder and read once (the
// materialised copy); the rest still reads.
func TestForgetLeavesNoByteOnDisk(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	cl := s3Of(c, c.creds)
	c.ok("repo/create", map[string]any{"repo": "fdk", "protected": false})
	rnd := func(seed uint64) []byte {
		r := rand.New(rand.NewPCG(seed, 1))
		b := make([]byte, 300<<10)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	v1, v2, lazy, keep := rnd(1), rnd(2), rnd(3), rnd(4)
	put := func(key string, b []byte) {
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("fdk"), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
			t.Fatal(err)
		}
	}
	put("crm/acme.bin", v1)
	put("keep.bin", keep)
	c.ok("commit/create", map[string]any{"repo": "fdk", "branch": "main", "message": "v1"})
	c.ok("checkpoint/create", map[string]any{"repo": "fdk", "branch": "main", "name": "before"})
	put("crm/acme.bin", v2)
	c.ok("commit/create", map[string]any{"repo": "fdk", "branch": "main", "message": "v2"})

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "acme-scan.bin"), lazy, 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("source/add", map[string]any{"repo": "fdk", "url": "dir:" + dir, "prefix": "crm/files/", "wait": true})
	if got := readBody(t, cl, "crm/files/acme-scan.bin"); !bytes.Equal(got, lazy) {
		t.Fatal("the lazy file did not read")
	}
	for _, b := range [][]byte{v1, v2, lazy} {
		if castest.FindOnDisk(t, c.srv.DataDir, b[5000:5064]) == "" {
			t.Fatal("the probe does not find what is there: the test would prove nothing")
		}
	}
	var rep apiv1.ForgetReport
	if err := typed(c.srv, c.creds).Do(ctx, apiv1.ForgetRequest{Repo: "fdk", Paths: []string{"crm/**"}}, &rep); err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{v1, v2, lazy} {
		if p := castest.FindOnDisk(t, c.srv.DataDir, b[5000:5064]); p != "" {
			t.Errorf("content %d of the forgotten files is still in %s (report %+v)", i, p, rep.Report)
		}
	}
	if got := readBody(t, cl, "keep.bin"); !bytes.Equal(got, keep) {
		t.Fatal("keep.bin changed")
	}
	if fs := c.ok("admin/fsck", map[string]any{}); fs["ok"] != true {
		t.Fatalf("fsck after the forget: %v", fs)
	}
}

func readBody(t *testing.T, cl *s3.Client, key string) []byte {
	t.Helper()
	b, err := io.ReadAll(getBody(t, cl, "fdk", key))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
