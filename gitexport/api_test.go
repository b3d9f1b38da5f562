package gitexport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/gitexport"
	"github.com/agentnas/nas/lease"
	"github.com/agentnas/nas/nastest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

var owner = aws.Credentials{AccessKeyID: nastest.AccessKey, SecretAccessKey: nastest.SecretKey}

func s3Client(srv *nastest.Server, creds aws.Credentials, opts ...func(*s3.Options)) *s3.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.StaticCredentialsProvider{Value: creds}, RetryMaxAttempts: 1,
		HTTPClient: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	return s3.NewFromConfig(cfg, append([]func(*s3.Options){func(o *s3.Options) {
		o.BaseEndpoint = aws.String(srv.Endpoint)
		o.UsePathStyle = true
	}}, opts...)...)
}

func onBranch(name string) func(*s3.Options) {
	return s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", name))
}

// api is a control-API client of srv with creds.
func api(srv *nastest.Server, creds aws.Credentials) *client.Client {
	return client.New(client.Config{Endpoint: srv.Endpoint, Credentials: creds, Attempts: 1})
}

// exporter is a gitexport.Client of srv with creds.
func exporter(srv *nastest.Server, creds aws.Credentials) *gitexport.Client {
	return &gitexport.Client{C: api(srv, creds)}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func randBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// seedOverS3 builds a repository the way clients do: thousands of PUTs,
// a multipart upload, a copy, metadata and checksums, awkward keys, a
// branch, a merge, a checkpoint and an uncommitted change.
func seedOverS3(t *testing.T, srv *nastest.Server, repo string, n int) {
	ctx := context.Background()
	c := s3Client(srv, owner)
	oc := api(srv, owner)
	must(t, oc.Do(ctx, apiv1.RepoCreateRequest{Repo: repo, Protected: new(bool)}, nil))
	putMany := func(cl *s3.Client, from, to int, tag string) {
		var wg sync.WaitGroup
		errs := make(chan error, to-from)
		sem := make(chan struct{}, 8)
		for i := from; i < to; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer wg.Done()
				defer func() { <-sem }()
				_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String(fmt.Sprintf("data/%02d/f%05d", i%13, i)),
					Body: strings.NewReader(fmt.Sprintf("%s %d", tag, i))})
				errs <- err
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			must(t, err)
		}
	}
	commit := func(br, msg string) {
		must(t, oc.Do(ctx, apiv1.CommitCreateRequest{Repo: repo, Branch: br, Message: msg}, nil))
	}
	putMany(c, 0, n, "v1")
	for _, k := range []string{"a//b", "dir/", "dir/inside", ".git/config", ".gitmodules", "x", "x/y", "100%", "sp ace", "é/ü", "x/.nas"} {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String(k), Body: strings.NewReader("awkward " + k)})
		must(t, err)
	}
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("big/one.bin"), Body: bytes.NewReader(randBytes(1, 3<<20)),
		ContentType: aws.String("application/x-big"), CacheControl: aws.String("max-age=60"), ContentDisposition: aws.String("attachment"),
		Metadata: map[string]string{"owner": "alice", "purpose": "export test"}, ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	must(t, err)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("big/multi.bin"),
		Metadata: map[string]string{"parts": "3"}})
	must(t, err)
	var parts []types.CompletedPart
	for i, size := range []int{5 << 20, 5 << 20, 123457} {
		p, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(repo), Key: aws.String("big/multi.bin"), UploadId: up.UploadId,
			PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(randBytes(uint64(10+i), size))})
		must(t, err)
		parts = append(parts, types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(int32(i + 1))})
	}
	_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("big/multi.bin"),
		UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	must(t, err)
	_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("big/copy.bin"), CopySource: aws.String(repo + "/big/one.bin")})
	must(t, err)
	commit("main", "first load")

	must(t, oc.Do(ctx, apiv1.BranchCreateRequest{Repo: repo, Name: "feat", From: "main"}, nil))
	putMany(s3Client(srv, owner, onBranch("feat")), 0, n/5, "feat")
	commit("feat", "feature")
	putMany(c, n/2, n/2+n/5, "v2")
	_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("x")})
	must(t, err)
	commit("main", "second")
	must(t, oc.Do(ctx, apiv1.MergeCreateRequest{Repo: repo, From: "feat", Into: "main", Message: "merge feat"}, nil))
	must(t, oc.Do(ctx, apiv1.CheckpointCreateRequest{Repo: repo, Branch: "main", Name: "after-merge"}, nil))
	putMany(c, n-n/10, n, "v3")
	commit("main", "third")
	must(t, oc.Do(ctx, apiv1.BranchCreateRequest{Repo: repo, Name: "wip", From: "main"}, nil))
	_, err = s3Client(srv, owner, onBranch("wip")).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("draft"), Body: strings.NewReader("uncommitted")})
	must(t, err)
}

// overS3Keys is more keys than one ListObjectVersions page (1,000), so
// listing the import's versions pages.
const overS3Keys = 1100

func TestExportImportOverAPI(t *testing.T) {
	t.Parallel()
	srv := nastest.Start(t)
	ctx := context.Background()
	seedOverS3(t, srv, "src", overS3Keys)
	cl := exporter(srv, owner)
	dir := filepath.Join(t.TempDir(), "src.git")
	exp, err := cl.Export(ctx, "src", dir)
	must(t, err)
	if len(exp.Uncommitted) != 1 || exp.Uncommitted[0].Branch != "wip" || !strings.Contains(gitexport.Summary(exp), "wip") {
		t.Errorf("export does not say that wip has uncommitted changes: %+v", exp)
	}
	git(t, dir, "fsck", "--strict", "--no-dangling")
	if log := git(t, dir, "log", "-1", "--format=%B", "main"); !strings.Contains(log, "Nas-Commit: ") || !strings.Contains(log, "Principal: ") {
		t.Errorf("git log lacks trailers:\n%s", log)
	}
	work := filepath.Join(t.TempDir(), "work")
	git(t, filepath.Dir(work), "clone", "-q", dir, work)
	got, err := os.ReadFile(filepath.Join(work, "big", "one.bin"))
	must(t, err)
	if !bytes.Equal(got, randBytes(1, 3<<20)) {
		t.Error("checked-out big/one.bin differs")
	}
	for p, want := range map[string]string{"a/%/b": "awkward a//b", "dir/%": "awkward dir/", "%2Egit/config": "awkward .git/config", "x/y": "awkward x/y", "100%25": "awkward 100%"} {
		if b, err := os.ReadFile(filepath.Join(work, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v", p, b, err)
		}
	}

	// A mirrored, garbage-collected copy imports under a new name.
	mirror := filepath.Join(t.TempDir(), "mirror.git")
	git(t, filepath.Dir(mirror), "clone", "-q", "--mirror", dir, mirror)
	git(t, mirror, "gc", "-q", "--aggressive", "--prune=now")
	if _, err := cl.Import(ctx, mirror, "dst"); err != nil {
		t.Fatalf("import: %v", err)
	}
	compareOverAPI(t, srv, "src", "dst")

	// Import over an existing repository is refused.
	if _, err := cl.Import(ctx, dir, "dst"); client.Code(err) != apiv1.CodeAlreadyExists {
		t.Errorf("import over an existing repository: %v", err)
	}
	// A plain clone (branches under refs/remotes, the export tag kept)
	// imports too.
	if _, err := cl.Import(ctx, work, "dst2"); err != nil {
		t.Errorf("import of a plain clone: %v", err)
	}

	// A lease can neither export nor import.
	oc := api(srv, owner)
	var lr apiv1.LeaseResponse
	must(t, oc.Do(ctx, apiv1.RolePutRequest{Role: lease.Role{Name: "agent", Repo: "src",
		View: []lease.Rule{{Path: "**", Actions: []lease.Action{lease.List, lease.Read}}}}}, nil))
	must(t, oc.Do(ctx, apiv1.LeaseCreateRequest{Repo: "src", Role: "agent", ForkFrom: "main", TTL: "1h", Paths: []string{"**"}, Actions: []string{"list", "read"}}, &lr))
	lc := exporter(srv, aws.Credentials{AccessKeyID: lr.Lease.AccessKeyID, SecretAccessKey: lr.Lease.SecretAccessKey, SessionToken: lr.Lease.SessionToken})
	_, err = lc.Export(ctx, "src", filepath.Join(t.TempDir(), "lease.git"))
	var re *client.Error
	if !errors.As(err, &re) || re.Code != apiv1.CodeAccessDenied || !strings.Contains(re.Message, "owner operation") {
		t.Errorf("a lease exported: %v", err)
	}
	if _, err := lc.Import(ctx, dir, "by-lease"); client.Code(err) != apiv1.CodeAccessDenied {
		t.Errorf("a lease imported: %v", err)
	}
}

// branchState is what an import must carry of a branch.
type branchState struct {
	Name, Head string
	Protected  bool
}

// branchStates lists repo's branches.
func branchStates(t *testing.T, oc *client.Client, repo string) []branchState {
	t.Helper()
	var out apiv1.BranchListResponse
	must(t, oc.Do(context.Background(), apiv1.BranchListRequest{Repo: repo}, &out))
	var states []branchState
	for _, b := range out.Branches {
		states = append(states, branchState{b.Name, b.Head, b.Protected})
	}
	return states
}

// commitIDs is the history of ref in repo, newest first.
func commitIDs(t *testing.T, oc *client.Client, repo, ref string) []string {
	t.Helper()
	var out apiv1.CommitLogResponse
	must(t, oc.Do(context.Background(), apiv1.CommitLogRequest{Repo: repo, Ref: ref, Page: apiv1.Page{Limit: 1000}}, &out))
	var ids []string
	for _, c := range out.Commits {
		ids = append(ids, c.ID)
	}
	return ids
}

// compareOverAPI checks through the control API and S3 that b has a's
// branches, history (commit IDs) and, for every version on main and every
// commit of main, the same bytes, ETag, version ID and metadata.
func compareOverAPI(t *testing.T, srv *nastest.Server, a, b string) {
	t.Helper()
	ctx := context.Background()
	oc := api(srv, owner)
	ba, bb := branchStates(t, oc, a), branchStates(t, oc, b)
	if !slices.Equal(ba, bb) {
		t.Fatalf("branches differ:\n%v\n%v", ba, bb)
	}
	var commits []string
	for _, br := range ba {
		la, lb := commitIDs(t, oc, a, br.Name), commitIDs(t, oc, b, br.Name)
		if !slices.Equal(la, lb) {
			t.Fatalf("branch %s: logs differ", br.Name)
		}
		if br.Name == "main" {
			commits = la
		}
	}
	c := s3Client(srv, owner)
	var versions []types.ObjectVersion
	var km, vm *string
	for {
		out, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(b), KeyMarker: km, VersionIdMarker: vm})
		must(t, err)
		versions = append(versions, out.Versions...)
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		km, vm = out.NextKeyMarker, out.NextVersionIdMarker
	}
	if len(versions) < overS3Keys {
		t.Fatalf("only %d versions listed on the import", len(versions))
	}
	same := func(key, vid string) {
		oa, ea := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a), Key: aws.String(key), VersionId: aws.String(vid)})
		ob, eb := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String(key), VersionId: aws.String(vid)})
		if (ea == nil) != (eb == nil) {
			t.Fatalf("%s@%s: source %v, import %v", key, vid, ea, eb)
		}
		if ea != nil {
			return
		}
		defer oa.Body.Close()
		defer ob.Body.Close()
		ra, _ := io.ReadAll(oa.Body)
		rb, _ := io.ReadAll(ob.Body)
		if !bytes.Equal(ra, rb) || aws.ToString(oa.ETag) != aws.ToString(ob.ETag) || aws.ToString(oa.VersionId) != aws.ToString(ob.VersionId) ||
			fmt.Sprint(oa.Metadata) != fmt.Sprint(ob.Metadata) || aws.ToString(oa.ContentType) != aws.ToString(ob.ContentType) ||
			aws.ToString(oa.CacheControl) != aws.ToString(ob.CacheControl) || aws.ToString(oa.ChecksumSHA256) != aws.ToString(ob.ChecksumSHA256) {
			t.Fatalf("%s@%s differs after import", key, vid)
		}
	}
	keys := map[string]bool{}
	for _, v := range versions {
		same(aws.ToString(v.Key), aws.ToString(v.VersionId))
		keys[aws.ToString(v.Key)] = true
	}
	// Every commit of main, as versionId, for a sample of keys.
	sample := []string{"big/one.bin", "big/multi.bin", "big/copy.bin", "x", "x/y", "a//b", "dir/", "data/00/f00000", "data/01/f01001", "data/05/f01995"}
	for _, id := range commits {
		for _, k := range sample {
			same(k, id)
		}
	}
}
