package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/cas/castest"
)

// sensitiveFixture is a repository whose crm/acme/** is sensitive in
// key domain acme, with a client of the owner.
type sensitiveFixture struct {
	c  *client
	cl *s3.Client
}

func newSensitiveFixture(t *testing.T) *sensitiveFixture {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "sns", "protected": false})
	c.ok("label/set", map[string]any{"repo": "sns", "glob": "crm/acme/**", "retention": "sensitive", "domain": "acme"})
	return &sensitiveFixture{c: c, cl: s3Of(c, c.creds)}
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func (f *sensitiveFixture) put(t *testing.T, key string, b []byte, meta map[string]string) {
	t.Helper()
	if _, err := f.cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("sns"), Key: aws.String(key),
		Body: bytes.NewReader(b), Metadata: meta}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func (f *sensitiveFixture) get(key, rng, version string) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: aws.String("sns"), Key: aws.String(key)}
	if rng != "" {
		in.Range = aws.String(rng)
	}
	if version != "" {
		in.VersionId = aws.String(version)
	}
	out, err := f.cl.GetObject(context.Background(), in)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// multipart uploads parts as one object.
func (f *sensitiveFixture) multipart(t *testing.T, key string, parts ...[]byte) {
	t.Helper()
	ctx := context.Background()
	up, err := f.cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("sns"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	var done []s3types.CompletedPart
	for i, p := range parts {
		n := int32(i + 1)
		out, err := f.cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("sns"), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(n), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, s3types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
	}
	if _, err := f.cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("sns"), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
}

// TestSensitiveSealed: a sensitive file's bytes never reach the disk in
// the clear, whether PUT, uploaded in parts or copied; every read (whole,
// ranged across frames and parts, a copy, a compose, a budgeted read)
// answers the plaintext, and HEAD names the class and domain.
func TestSensitiveSealed(t *testing.T) {
	f := newSensitiveFixture(t)
	ctx := context.Background()
	doc := randomBytes(1, 300<<10)
	p1, p2 := randomBytes(2, 5<<20), randomBytes(3, 1<<20)
	f.put(t, "crm/acme/contract.bin", doc, nil)
	f.multipart(t, "crm/acme/scan.bin", p1, p2)
	f.put(t, "notes/asked.txt", []byte("sealed because the writer asked\n"), map[string]string{"nas-retention": "sensitive"})
	whole := append(bytes.Clone(p1), p2...)
	for _, tc := range []struct {
		key, rng string
		want     []byte
	}{
		{"crm/acme/contract.bin", "", doc},
		{"crm/acme/contract.bin", "bytes=65530-200000", doc[65530:200001]},
		{"crm/acme/contract.bin", "bytes=-10", doc[len(doc)-10:]},
		{"crm/acme/scan.bin", "", whole},
		{"crm/acme/scan.bin", fmt.Sprintf("bytes=%d-%d", len(p1)-100, len(p1)+100), whole[len(p1)-100 : len(p1)+101]},
	} {
		got, err := f.get(tc.key, tc.rng, "")
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Fatalf("GET %s %s: %v (%d bytes, want %d)", tc.key, tc.rng, err, len(got), len(tc.want))
		}
	}
	h, err := f.cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sns"), Key: aws.String("crm/acme/contract.bin")})
	if err != nil || h.Metadata["nas-retention"] != "sensitive" || h.Metadata["nas-domain"] != "acme" || aws.ToInt64(h.ContentLength) != int64(len(doc)) {
		t.Fatalf("HEAD: %v %v", h, err)
	}
	if h, err := f.cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sns"), Key: aws.String("notes/asked.txt")}); err != nil ||
		h.Metadata["nas-domain"] != "sns" {
		t.Fatalf("a write that asked for sensitive: %v %v", h, err)
	}
	if _, err := f.cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sns"), Key: aws.String("out/copy.bin"),
		CopySource: aws.String("sns/crm/acme/contract.bin")}); err != nil {
		t.Fatal(err)
	}
	if got, err := f.get("out/copy.bin", "", ""); err != nil || !bytes.Equal(got, doc) {
		t.Fatalf("the copy: %v", err)
	}
	f.c.ok("object/compose", map[string]any{"repo": "sns", "key": "out/joined.bin", "segments": []map[string]any{
		{"key": "crm/acme/contract.bin", "offset": 100, "length": 70000}, {"data": "dGFpbA=="}}})
	if got, err := f.get("out/joined.bin", "", ""); err != nil || !bytes.Equal(got, append(bytes.Clone(doc[100:70100]), "tail"...)) {
		t.Fatalf("the compose: %v", err)
	}
	for _, key := range []string{"out/copy.bin", "out/joined.bin"} {
		if h, err := f.cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sns"), Key: aws.String(key)}); err != nil || h.Metadata["nas-domain"] != "acme" {
			t.Fatalf("%s does not stay sealed under acme: %v %v", key, h, err)
		}
	}
	st := f.c.ok("object/stat", map[string]any{"repo": "sns", "key": "crm/acme/contract.bin", "inline_max": 1 << 20})["object"].(map[string]any)
	if st["sealed"] != true || len(st["chunks"].([]any)) != 0 {
		t.Fatalf("stat of a sealed object hands out its chunk map: %v", st)
	}
	plain := randomBytes(9, 100<<10)
	f.put(t, "plain/control.bin", plain, nil)
	f.c.ok("commit/create", map[string]any{"repo": "sns", "branch": "main", "message": "sealed"})
	if castest.FindOnDisk(t, f.c.srv.DataDir, plain[70000:70064]) == "" {
		t.Fatal("the probe does not find a plain file's bytes: the test would prove nothing")
	}
	for i, probe := range [][]byte{doc[70000:70064], p1[70000:70064], p2[70000:70064], p1[len(p1)-64:], p2[:64]} {
		if p := castest.FindOnDisk(t, f.c.srv.DataDir, probe); p != "" {
			t.Errorf("plaintext %d of a sensitive file (the ends of parts included) is on disk in %s", i, p)
		}
	}
	if fs := f.c.ok("admin/fsck", map[string]any{}); fs["ok"] != true {
		t.Fatalf("fsck: %v", fs)
	}
}

// TestForgetDestroysKeys: destroying a key domain makes every version
// sealed under it unreadable, at the head and in old commits, with no
// history rewrite (keep_history), while other domains read on; the
// domain of forgotten files goes by itself when nothing kept uses it.
func TestForgetDestroysKeys(t *testing.T) {
	f := newSensitiveFixture(t)
	ctx := context.Background()
	v1, v2 := randomBytes(4, 100<<10), randomBytes(5, 100<<10)
	f.put(t, "crm/acme/contract.bin", v1, nil)
	f.put(t, "notes/asked.txt", []byte("other domain\n"), map[string]string{"nas-retention": "sensitive"})
	first := f.c.ok("commit/create", map[string]any{"repo": "sns", "branch": "main", "message": "v1"})["commit"].(map[string]any)["id"].(string)
	f.put(t, "crm/acme/contract.bin", v2, nil)
	if _, err := f.cl.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("sns"), Key: aws.String("elsewhere/copy.bin"),
		CopySource: aws.String("sns/crm/acme/contract.bin")}); err != nil {
		t.Fatal(err)
	}
	f.c.ok("commit/create", map[string]any{"repo": "sns", "branch": "main", "message": "v2"})
	if got, err := f.get("crm/acme/contract.bin", "", first); err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("the old version before the forget: %v", err)
	}

	var rep apiv1.ForgetReport
	if err := typed(f.c.srv, f.c.creds).Do(ctx, apiv1.ForgetRequest{Repo: "sns", Domains: []string{"acme"}, KeepHistory: true}, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Report.KeysDestroyed) != 1 || !strings.HasPrefix(rep.Report.KeysDestroyed[0], "sns/acme/") || rep.RetentionClass != "sensitive" {
		t.Fatalf("report: %+v", rep)
	}
	for _, tc := range []struct{ key, version string }{{"crm/acme/contract.bin", first}, {"crm/acme/contract.bin", ""}, {"elsewhere/copy.bin", ""}} {
		if _, err := f.get(tc.key, "", tc.version); errCode(err) != "InvalidObjectState" {
			t.Errorf("GET %s@%q after its domain was destroyed: %v, want InvalidObjectState", tc.key, tc.version, err)
		}
	}
	f.c.fails("files/read", map[string]any{"repo": "sns", "path": "crm/acme/contract.bin"}, 410, apiv1.CodeKeyDestroyed)
	if got, err := f.get("notes/asked.txt", "", ""); err != nil || string(got) != "other domain\n" {
		t.Fatalf("another domain after acme was destroyed: %v", err)
	}

	// The domain of the forgotten notes is destroyed unasked: nothing
	// kept uses it.
	if err := typed(f.c.srv, f.c.creds).Do(ctx, apiv1.ForgetRequest{Repo: "sns", Paths: []string{"notes/**"}}, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Report.KeysDestroyed) != 1 || !strings.HasPrefix(rep.Report.KeysDestroyed[0], "sns/sns/") {
		t.Fatalf("forgetting the only file of a domain: %+v", rep.Report)
	}
}

// TestForgetOtherRepositoryDomain: a writer in one repository that names
// another repository's key domain gets its own domain of that name, so
// forgetting the file (which destroys its domain) cannot shred the
// other repository's sensitive files; nor can a forget in the other
// repository destroy the first's by naming the domain.
func TestForgetOtherRepositoryDomain(t *testing.T) {
	f := newSensitiveFixture(t)
	ctx := context.Background()
	f.put(t, "crm/acme/contract.bin", []byte("acme's contract\n"), nil)
	f.c.ok("repo/create", map[string]any{"repo": "evil", "protected": false})
	if _, err := f.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("evil"), Key: aws.String("bait.txt"), Body: strings.NewReader("bait\n"),
		Metadata: map[string]string{"nas-retention": "sensitive", "nas-domain": "acme"}}); err != nil {
		t.Fatal(err)
	}
	head, err := f.cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("evil"), Key: aws.String("bait.txt")})
	if err != nil || head.Metadata["nas-domain"] != "acme" {
		t.Fatalf("HEAD bait: %v %v", head, err)
	}
	var rep apiv1.ForgetReport
	if err := typed(f.c.srv, f.c.creds).Do(ctx, apiv1.ForgetRequest{Repo: "evil", Paths: []string{"bait.txt"}}, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Report.KeysDestroyed) != 1 || !strings.HasPrefix(rep.Report.KeysDestroyed[0], "evil/acme/") {
		t.Fatalf("forgetting the bait: %+v", rep.Report)
	}
	if got, err := f.get("crm/acme/contract.bin", "", ""); err != nil || string(got) != "acme's contract\n" {
		t.Fatalf("sns's acme file after evil's acme was forgotten: %q %v", got, err)
	}
	if err := typed(f.c.srv, f.c.creds).Do(ctx, apiv1.ForgetRequest{Repo: "evil", Domains: []string{"acme"}, KeepHistory: true}, &rep); err != nil {
		t.Fatal(err)
	}
	if got, err := f.get("crm/acme/contract.bin", "", ""); err != nil || string(got) != "acme's contract\n" {
		t.Fatalf("sns's acme file after a forget of domain acme in evil: %q %v", got, err)
	}
}
