package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/nastest"
)

// The small world: a lease sees shared/launch/** (list, read, write,
// delete) and shared/readonly/** (list, read) on its fork of main, and
// nothing else exists for it, on every S3 path.

// worldSeed is what the owner writes on main before the fork: the visible
// keys and their hidden neighbours.
var worldSeed = map[string]string{
	"shared/launch/a.txt":      "launch-a",
	"shared/launch/sub/b.txt":  "launch-b",
	"shared/readonly/r.txt":    "readonly-r",
	"shared/launchpad/x":       "launchpad",
	"shared/launch":            "launch-no-slash",
	"shared/launch2/x":         "launch2",
	"shared/LAUNCH/x":          "upper",
	"SHARED/launch/a.txt":      "upper-root",
	"shared/secret/y":          "secret",
	"finance/x":                "finance-x",
	"top.txt":                  "top",
	"/shared/launch/a.txt":     "leading-slash",
	"shared//launch/a.txt":     "double-slash",
	"shared/l\u0430unch/a.txt": "cyrillic-a", // а is U+0430
	"shared\u2215launch/a.txt": "division-slash",
	"shared/launch\uff0fa.txt": "fullwidth-solidus",
}

// hiddenSeed lists the seeded keys outside the lease's view.
func hiddenSeed() []string {
	var out []string
	for k := range worldSeed {
		if !visibleUnder(k, "shared/launch/", "shared/readonly/") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

type world struct {
	srv     *nastest.Server
	repo    string
	own     *s3.Client // owner, default branch (main)
	ownBr   *s3.Client // owner, on the lease's branch
	oc      *ctl
	li      *leaseInfo
	lc      *s3.Client // the lease
	fork    string     // the commit the lease's branch forked from
	after   string     // a commit on main after the fork
	mainV   string     // version of shared/launch/a.txt written on main after the fork
	hidV    string     // version of finance/branch-only.txt on the lease's branch
	hidUp   string     // owner's upload of finance/upload on the lease's branch
	mainUp  string     // owner's upload of shared/launch/main-upload on main
	stagedV string     // version of shared/launch/staged-on-main, staged on main at the fork
}

var worldView = []map[string]any{
	{"path": "shared/launch/**", "actions": []string{"list", "read", "write", "delete"}},
	{"path": "shared/readonly/**", "actions": []string{"list", "read"}},
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	srv := nastest.Start(t)
	w := &world{srv: srv, repo: "world", own: client(t, srv), oc: ownerCtl(t, srv)}
	createBucket(t, w.own, w.repo)
	createBucket(t, w.own, "other")
	put(t, w.own, "other", "shared/launch/a.txt", []byte("other-repo"))
	for k, v := range worldSeed {
		put(t, w.own, w.repo, k, []byte(v))
	}
	w.fork = w.oc.commit(w.repo, "main", "seed")
	// Staged on main but not committed when the lease forks: not part of
	// the fork.
	w.stagedV = aws.ToString(put(t, w.own, w.repo, "shared/launch/staged-on-main", []byte("staged")).VersionId)
	w.li = w.oc.newLease(map[string]any{"repo": w.repo, "role": "agent", "fork_from": "main", "ttl": "1h",
		"purpose": "small world", "view": worldView})
	w.lc = leaseS3(t, srv, w.li)
	w.ownBr = newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(w.li.Branch)}})

	// After the fork: main moves on, the owner writes hidden keys on the
	// lease's branch and starts uploads on hidden and foreign targets.
	w.mainV = aws.ToString(put(t, w.own, w.repo, "shared/launch/a.txt", []byte("main-after-fork")).VersionId)
	put(t, w.own, w.repo, "shared/launch/main-only.txt", []byte("main-only"))
	w.after = w.oc.commit(w.repo, "main", "after the fork")
	w.hidV = aws.ToString(put(t, w.ownBr, w.repo, "finance/branch-only.txt", []byte("branch-secret")).VersionId)
	put(t, w.ownBr, w.repo, "shared/secret/branch.txt", []byte("branch-secret-2"))
	up, err := w.ownBr.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(w.repo), Key: aws.String("finance/upload")})
	must(t, err)
	w.hidUp = aws.ToString(up.UploadId)
	_, err = w.ownBr.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(w.repo), Key: aws.String("finance/upload"),
		UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader([]byte("part-one"))})
	must(t, err)
	up, err = w.own.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(w.repo), Key: aws.String("shared/launch/main-upload")})
	must(t, err)
	w.mainUp = aws.ToString(up.UploadId)
	return w
}

func TestLeaseSmallWorld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	repo, lc, li := w.repo, w.lc, w.li

	t.Run("VisibleKeysReadTheFork", func(t *testing.T) {
		got, _ := get(t, lc, repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("launch-a")) // the fork, not main's later version
		got, _ = get(t, lc, repo, "shared/readonly/r.txt")
		wantBytes(t, got, []byte("readonly-r"))
		got, _ = get(t, lc, alias(repo, li.Branch), "shared/launch/sub/b.txt")
		wantBytes(t, got, []byte("launch-b"))
		got, _ = get(t, leaseS3(t, w.srv, li, onBranch(li.Branch)), repo, "shared/launch/sub/b.txt")
		wantBytes(t, got, []byte("launch-b"))
	})

	t.Run("HiddenKeysDoNotExist", func(t *testing.T) {
		keys := append(hiddenSeed(), "finance/branch-only.txt", "shared/secret/branch.txt",
			"shared/launch/main-only.txt", // on main only
			"shared/launch/a.txt/",        // visible name, absent
			"Shared/launch/a.txt", "shared/launch/A.txt", "shared/readonly",
		)
		for _, k := range keys {
			t.Run(url.PathEscape(k), func(t *testing.T) {
				_, _, err := tryGet(lc, repo, k)
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
				_, err = lc.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String(k)})
				wantErr(t, err, http.StatusNotFound, "")
				_, err = lc.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(repo), Key: aws.String(k)})
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
				_, _, err = tryGet(lc, repo, k, func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=0-0") })
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			})
		}
		// They do exist for the owner on the same branch.
		for _, k := range hiddenSeed() {
			ownerHas(t, w.own, repo, li.Branch, k, []byte(worldSeed[k]))
		}
	})

	t.Run("RawKeyTricks", func(t *testing.T) {
		base := w.srv.Endpoint + "/" + repo + "/"
		for _, path := range []string{
			"shared/launch/../../finance/x",
			"shared/launch/..%2F..%2Ffinance%2Fx",
			"shared/launch%2F..%2F..%2Ffinance/x",
			"shared/launch/%2F..%2Ffinance%2Fx",
			"shared/launch/%2e%2e/%2e%2e/finance/x",
			"shared/launch/./../../finance/x",
			"/shared/launch/a.txt",
			"shared//launch/a.txt",
			"./shared/launch/a.txt",
			"shared/./launch/a.txt",
			"shared/launch/..",
			"shared%2Flaunch%2F..%2F..%2Ffinance%2Fx",
		} {
			t.Run(url.PathEscape(path), func(t *testing.T) {
				st, _, body := rawDo(t, http.MethodGet, base+path, nil, li.Creds, nil)
				if st != http.StatusNotFound || xmlCode(body) != "NoSuchKey" {
					t.Fatalf("GET %s: %d %s", path, st, body)
				}
				st, _, body = rawDo(t, http.MethodHead, base+path, nil, li.Creds, nil)
				if st != http.StatusNotFound {
					t.Fatalf("HEAD %s: %d %s", path, st, body)
				}
			})
		}
		// A key that only looks like a traversal is a key of its own
		// inside the view: writing it changes nothing outside.
		st, _, body := rawDo(t, http.MethodPut, base+"shared/launch/../../finance/x", []byte("pwned"), li.Creds, nil)
		if st != http.StatusOK {
			t.Fatalf("PUT literal ../ key: %d %s", st, body)
		}
		st, _, body = rawDo(t, http.MethodPut, base+"shared/launch/%2e%2e%2F..%2Ftop.txt", []byte("pwned"), li.Creds, nil)
		if st != http.StatusOK {
			t.Fatalf("PUT literal %%2e key: %d %s", st, body)
		}
		ownerHas(t, w.own, repo, li.Branch, "finance/x", []byte("finance-x"))
		ownerHas(t, w.own, repo, li.Branch, "top.txt", []byte("top"))
		ownerHas(t, w.own, repo, li.Branch, "shared/launch/../../finance/x", []byte("pwned"))
		ownerHas(t, w.own, repo, li.Branch, "shared/launch/../../top.txt", []byte("pwned"))
		got, _ := get(t, lc, repo, "shared/launch/../../finance/x")
		wantBytes(t, got, []byte("pwned"))
	})

	t.Run("WritesOutsideTheView", func(t *testing.T) {
		for _, k := range append(hiddenSeed(), "finance/new.txt", "shared/launchpad/new", "shared/LAUNCH/new") {
			t.Run(url.PathEscape(k), func(t *testing.T) {
				_, err := lc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String(k), Body: strings.NewReader("overwritten")})
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
				if want, ok := worldSeed[k]; ok {
					ownerHas(t, w.own, repo, li.Branch, k, []byte(want))
				} else {
					_, err := w.ownBr.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String(k)})
					wantErr(t, err, http.StatusNotFound, "")
				}
				_, err = lc.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(repo), Key: aws.String(k), ACL: types.ObjectCannedACLPrivate})
				wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			})
		}
	})

	t.Run("DeletesOutsideTheViewChangeNothing", func(t *testing.T) {
		hidden := append(hiddenSeed(), "finance/branch-only.txt")
		for _, k := range hidden {
			out, err := lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String(k)})
			if err != nil {
				t.Fatalf("DELETE hidden %q: %v, want success", k, err)
			}
			if out.DeleteMarker != nil && *out.DeleteMarker {
				t.Errorf("DELETE hidden %q reported a delete marker", k)
			}
		}
		_, err := lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("finance/branch-only.txt"), VersionId: aws.String(w.hidV)})
		if err != nil {
			t.Fatalf("DELETE hidden version: %v, want success", err)
		}
		var ids []types.ObjectIdentifier
		for _, k := range hidden {
			ids = append(ids, types.ObjectIdentifier{Key: aws.String(k)})
		}
		ids = append(ids, types.ObjectIdentifier{Key: aws.String("finance/branch-only.txt"), VersionId: aws.String(w.hidV)})
		out, err := lc.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(repo), Delete: &types.Delete{Objects: ids}})
		must(t, err)
		if len(out.Errors) != 0 {
			t.Errorf("DeleteObjects of hidden keys reported errors: %+v", out.Errors[0])
		}
		for _, d := range out.Deleted {
			if d.DeleteMarker != nil && *d.DeleteMarker {
				t.Errorf("DeleteObjects of hidden %q made a delete marker", aws.ToString(d.Key))
			}
		}
		for _, k := range hiddenSeed() {
			ownerHas(t, w.own, repo, li.Branch, k, []byte(worldSeed[k]))
		}
		ownerHas(t, w.own, repo, li.Branch, "finance/branch-only.txt", []byte("branch-secret"))
		got, _ := get(t, w.ownBr, repo, "finance/branch-only.txt", func(in *s3.GetObjectInput) { in.VersionId = aws.String(w.hidV) })
		wantBytes(t, got, []byte("branch-secret"))
		// Nor on main or in another repository.
		_, err = lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(alias(repo, "main")), Key: aws.String("shared/launch/a.txt")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("other"), Key: aws.String("shared/launch/a.txt")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		out, err = lc.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("other"),
			Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("shared/launch/a.txt")}}}})
		if err == nil && len(out.Errors) == 0 {
			t.Errorf("DeleteObjects in another repository answered success without errors")
		}
		got, _ = get(t, w.own, repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("main-after-fork"))
		got, _ = get(t, w.own, "other", "shared/launch/a.txt")
		wantBytes(t, got, []byte("other-repo"))
	})

	t.Run("Copy", func(t *testing.T) {
		self := alias(repo, li.Branch)
		for _, tc := range []struct {
			name, dst, src string
			opts           []func(*s3.Options)
			code           string
		}{
			{"DestinationHidden", "finance/copied", repo + "/shared/launch/a.txt", nil, "NoSuchKey"},
			{"DestinationSibling", "shared/launchpad/copied", repo + "/shared/launch/a.txt", nil, "NoSuchKey"},
			{"SourceHidden", "shared/launch/c1", repo + "/finance/x", nil, "NoSuchKey"},
			{"SourceHiddenOnBranchAlias", "shared/launch/c2", self + "/finance/branch-only.txt", nil, "NoSuchKey"},
			{"SourceHiddenVersion", "shared/launch/c3", repo + "/finance/branch-only.txt?versionId=" + w.hidV, nil, "NoSuchKey"},
			{"SourceLeadingSlashKey", "shared/launch/c4", repo + "//shared/launch/a.txt", nil, "NoSuchKey"},
			{"SourceTraversal", "shared/launch/c5", repo + "/shared/launch/../../finance/x2", nil, "NoSuchKey"},
			{"SourceOnMainByAlias", "shared/launch/c6", alias(repo, "main") + "/shared/launch/a.txt", nil, "NoSuchBucket"},
			{"SourceMainOnlyByAlias", "shared/launch/c7", alias(repo, "main") + "/shared/launch/main-only.txt", nil, "NoSuchBucket"},
			{"SourceOtherRepo", "shared/launch/c8", "other/shared/launch/a.txt", nil, "NoSuchBucket"},
			{"SourceOtherRepoAlias", "shared/launch/c9", alias("other", "main") + "/shared/launch/a.txt", nil, "NoSuchBucket"},
			{"SourceCommitAfterFork", "shared/launch/c10", repo + "/shared/launch/a.txt?versionId=" + w.after, nil, "NoSuchVersion"},
			{"SourceMainVersion", "shared/launch/c11", repo + "/shared/launch/a.txt?versionId=" + w.mainV, nil, "NoSuchVersion"},
			{"DestinationOnMainByHeader", "shared/launch/c12", repo + "/shared/launch/a.txt", []func(*s3.Options){onBranch("main")}, "NoSuchBucket"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := lc
				if tc.opts != nil {
					c = leaseS3(t, w.srv, li, tc.opts...)
				}
				_, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String(tc.dst), CopySource: aws.String(tc.src)})
				wantErr(t, err, http.StatusNotFound, tc.code)
				_, err = w.ownBr.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String(tc.dst)})
				wantErr(t, err, http.StatusNotFound, "") // nothing was written
			})
		}
		// Inside the view copying works, and reads the lease's branch.
		_, err := lc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/copy-ok"), CopySource: aws.String(repo + "/shared/launch/a.txt")})
		must(t, err)
		got, _ := get(t, lc, repo, "shared/launch/copy-ok")
		wantBytes(t, got, []byte("launch-a"))
		_, err = lc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/copy-fork"),
			CopySource: aws.String(repo + "/shared/launch/a.txt?versionId=" + w.fork)})
		must(t, err)
		got, _ = get(t, lc, repo, "shared/launch/copy-fork")
		wantBytes(t, got, []byte("launch-a"))
	})

	t.Run("UploadPartCopy", func(t *testing.T) {
		up, err := lc.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp-copy")})
		must(t, err)
		defer lc.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp-copy"), UploadId: up.UploadId})
		for _, tc := range []struct{ name, src, code string }{
			{"Hidden", repo + "/finance/x", "NoSuchKey"},
			{"HiddenSibling", repo + "/shared/launch2/x", "NoSuchKey"},
			{"HiddenOnBranch", alias(repo, li.Branch) + "/finance/branch-only.txt", "NoSuchKey"},
			{"MainByAlias", alias(repo, "main") + "/shared/launch/a.txt", "NoSuchBucket"},
			{"OtherRepo", "other/shared/launch/a.txt", "NoSuchBucket"},
			{"CommitAfterFork", repo + "/shared/launch/a.txt?versionId=" + w.after, "NoSuchVersion"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := lc.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp-copy"),
					UploadId: up.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String(tc.src)})
				wantErr(t, err, http.StatusNotFound, tc.code)
			})
		}
		_, err = lc.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp-copy"),
			UploadId: up.UploadId, PartNumber: aws.Int32(1), CopySource: aws.String(repo + "/shared/launch/a.txt")})
		must(t, err)
	})

	t.Run("MultipartOnHiddenKeys", func(t *testing.T) {
		for _, k := range []string{"finance/mp", "shared/launchpad/mp", "shared/launch", "shared/LAUNCH/mp"} {
			_, err := lc.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String(k)})
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		}
		for _, tc := range []struct{ name, key, id string }{
			{"OwnersUploadOfHiddenKey", "finance/upload", w.hidUp},
			{"HiddenUploadUnderVisibleKey", "shared/launch/a.txt", w.hidUp},
			{"UploadOnMain", "shared/launch/main-upload", w.mainUp},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b, k, id := aws.String(repo), aws.String(tc.key), aws.String(tc.id)
				_, err := lc.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: id, PartNumber: aws.Int32(2), Body: strings.NewReader("x")})
				wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
				_, err = lc.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: k, UploadId: id, PartNumber: aws.Int32(2),
					CopySource: aws.String(repo + "/shared/launch/a.txt")})
				wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
				_, err = lc.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: id})
				wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
				_, err = lc.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: id,
					MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: aws.String(etagOf([]byte("part-one")))}}}})
				wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
				_, err = lc.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: id})
				wantErr(t, err, http.StatusNotFound, "NoSuchUpload")
			})
		}
		// The owner's uploads are untouched.
		parts, err := w.ownBr.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(repo), Key: aws.String("finance/upload"), UploadId: aws.String(w.hidUp)})
		must(t, err)
		if len(parts.Parts) != 1 {
			t.Fatalf("owner's hidden upload has %d parts, want 1", len(parts.Parts))
		}
		_, err = w.own.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/main-upload"), UploadId: aws.String(w.mainUp)})
		must(t, err)
	})

	t.Run("Listings", func(t *testing.T) {
		type lister func(t *testing.T, prefix, delim string) (keys, prefixes []string)
		v2 := func(t *testing.T, prefix, delim string) (keys, prefixes []string) {
			p := s3.NewListObjectsV2Paginator(lc, &s3.ListObjectsV2Input{Bucket: aws.String(repo), Prefix: aws.String(prefix),
				Delimiter: aws.String(delim), MaxKeys: aws.Int32(2)})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				must(t, err)
				for _, o := range page.Contents {
					keys = append(keys, aws.ToString(o.Key))
				}
				for _, cp := range page.CommonPrefixes {
					prefixes = append(prefixes, aws.ToString(cp.Prefix))
				}
			}
			return keys, prefixes
		}
		v1 := func(t *testing.T, prefix, delim string) (keys, prefixes []string) {
			marker := ""
			for {
				out, err := lc.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(repo), Prefix: aws.String(prefix),
					Delimiter: aws.String(delim), Marker: aws.String(marker), MaxKeys: aws.Int32(2)})
				must(t, err)
				for _, o := range out.Contents {
					keys = append(keys, aws.ToString(o.Key))
					marker = aws.ToString(o.Key)
				}
				for _, cp := range out.CommonPrefixes {
					prefixes = append(prefixes, aws.ToString(cp.Prefix))
					marker = max(marker, aws.ToString(cp.Prefix))
				}
				if out.IsTruncated == nil || !*out.IsTruncated {
					return keys, prefixes
				}
				if out.NextMarker != nil {
					marker = *out.NextMarker
				}
			}
		}
		versions := func(t *testing.T, prefix, delim string) (keys, prefixes []string) {
			p := s3.NewListObjectVersionsPaginator(lc, &s3.ListObjectVersionsInput{Bucket: aws.String(repo), Prefix: aws.String(prefix),
				Delimiter: aws.String(delim), MaxKeys: aws.Int32(3)})
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				must(t, err)
				for _, v := range page.Versions {
					keys = append(keys, aws.ToString(v.Key))
				}
				for _, v := range page.DeleteMarkers {
					keys = append(keys, aws.ToString(v.Key))
				}
				for _, cp := range page.CommonPrefixes {
					prefixes = append(prefixes, aws.ToString(cp.Prefix))
				}
			}
			return keys, prefixes
		}
		seeds := []string{"shared/launch/a.txt", "shared/launch/sub/b.txt", "shared/readonly/r.txt"}
		for _, l := range []struct {
			name string
			fn   lister
		}{{"V2", v2}, {"V1", v1}, {"Versions", versions}} {
			t.Run(l.name, func(t *testing.T) {
				for _, tc := range []struct {
					prefix, delim string
					mustKeys      []string
					prefixes      []string // the common prefixes, exactly (or at least, with some)
					some          bool
				}{
					{"", "", seeds, nil, false},
					{"", "/", nil, []string{"shared/"}, false},
					{"", "a", nil, []string{"sha"}, false},
					{"shared/", "/", nil, []string{"shared/launch/", "shared/readonly/"}, false},
					{"shared/launch", "/", nil, []string{"shared/launch/"}, false},
					{"shared/launch/", "/", []string{"shared/launch/a.txt"}, []string{"shared/launch/sub/"}, true},
					{"shared/launch/", "", seeds[:2], nil, false},
					{"finance/", "", nil, nil, false},
					{"finance/", "/", nil, nil, false},
					{"shared/launchpad", "", nil, nil, false},
					{"shared/secret/", "/", nil, nil, false},
					{"shared/L", "/", nil, nil, false},
					{"top", "", nil, nil, false},
					{"/", "/", nil, nil, false},
					{"SHARED/", "/", nil, nil, false},
				} {
					keys, prefixes := l.fn(t, tc.prefix, tc.delim)
					for _, k := range keys {
						if !visibleUnder(k, "shared/launch/", "shared/readonly/") {
							t.Errorf("prefix %q delimiter %q: hidden key %q listed", tc.prefix, tc.delim, k)
						}
						if tc.delim != "" && strings.Contains(k[len(tc.prefix):], tc.delim) {
							t.Errorf("prefix %q delimiter %q: key %q should be rolled up", tc.prefix, tc.delim, k)
						}
					}
					for _, k := range tc.mustKeys {
						if !slices.Contains(keys, k) {
							t.Errorf("prefix %q delimiter %q: visible %q not listed (got %q)", tc.prefix, tc.delim, k, keys)
						}
					}
					slices.Sort(prefixes)
					prefixes = slices.Compact(prefixes)
					if tc.some {
						for _, p := range prefixes {
							if !visibleUnder(p, "shared/launch/", "shared/readonly/") {
								t.Errorf("prefix %q delimiter %q: common prefix %q holds nothing visible", tc.prefix, tc.delim, p)
							}
						}
						for _, p := range tc.prefixes {
							if !slices.Contains(prefixes, p) {
								t.Errorf("prefix %q delimiter %q: common prefix %q missing (got %q)", tc.prefix, tc.delim, p, prefixes)
							}
						}
					} else if !slices.Equal(prefixes, tc.prefixes) {
						t.Errorf("prefix %q delimiter %q: common prefixes %q, want %q", tc.prefix, tc.delim, prefixes, tc.prefixes)
					}
				}
			})
		}
		// Sanity: the owner sees the hidden names on the same branch.
		all := keysOf(t, w.ownBr, repo, "")
		for _, k := range []string{"finance/x", "shared/launchpad/x", "top.txt", "finance/branch-only.txt"} {
			if !slices.Contains(all, k) {
				t.Fatalf("owner does not see %q on the lease's branch", k)
			}
		}
	})

	t.Run("ListObjectVersionsShowsOnlyTheBranchsHistory", func(t *testing.T) {
		out, err := lc.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(repo), Prefix: aws.String("shared/launch/a.txt")})
		must(t, err)
		for _, v := range out.Versions {
			if aws.ToString(v.VersionId) == w.mainV {
				t.Errorf("main's version %s of shared/launch/a.txt listed on the fork", w.mainV)
			}
		}
		out, err = lc.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(repo), Prefix: aws.String("finance/")})
		must(t, err)
		if len(out.Versions)+len(out.DeleteMarkers)+len(out.CommonPrefixes) != 0 {
			t.Errorf("versions under finance/ listed: %d", len(out.Versions))
		}
		out, err = lc.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(repo), KeyMarker: aws.String("finance/branch-only.txt"),
			VersionIdMarker: aws.String(w.hidV)})
		must(t, err)
		for _, v := range out.Versions {
			if !visibleUnder(aws.ToString(v.Key), "shared/launch/", "shared/readonly/") {
				t.Errorf("hidden version %q listed after a hidden marker", aws.ToString(v.Key))
			}
		}
	})

	t.Run("ListMultipartUploads", func(t *testing.T) {
		for _, delim := range []string{"", "/"} {
			out, err := lc.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(repo), Delimiter: aws.String(delim)})
			must(t, err)
			for _, u := range out.Uploads {
				if id := aws.ToString(u.UploadId); id == w.hidUp || id == w.mainUp {
					t.Errorf("delimiter %q: upload %s of %q listed", delim, id, aws.ToString(u.Key))
				}
				if !visibleUnder(aws.ToString(u.Key), "shared/launch/", "shared/readonly/") {
					t.Errorf("delimiter %q: upload of hidden %q listed", delim, aws.ToString(u.Key))
				}
			}
			for _, cp := range out.CommonPrefixes {
				if p := aws.ToString(cp.Prefix); p != "shared/" {
					t.Errorf("delimiter %q: common prefix %q listed", delim, p)
				}
			}
		}
		own, err := w.ownBr.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(repo)})
		must(t, err)
		if len(own.Uploads) == 0 {
			t.Fatal("owner sees no upload on the lease's branch")
		}
	})

	t.Run("Versions", func(t *testing.T) {
		for _, tc := range []struct {
			name, key, vid string
			status         int
			code           string
		}{
			{"HiddenKeyVersion", "finance/branch-only.txt", w.hidV, 404, "NoSuchKey"},
			{"HiddenVersionOnVisibleKey", "shared/launch/a.txt", w.hidV, 404, "NoSuchVersion"},
			{"MainVersionOfVisibleKey", "shared/launch/a.txt", w.mainV, 404, "NoSuchVersion"},
			{"CommitAfterFork", "shared/launch/a.txt", w.after, 404, "NoSuchVersion"},
			{"CommitAfterForkMainOnlyKey", "shared/launch/main-only.txt", w.after, 404, "NoSuchVersion"},
			{"HiddenKeyAtForkCommit", "finance/x", w.fork, 404, "NoSuchKey"},
			{"StagedOnMainAtTheFork", "shared/launch/staged-on-main", w.stagedV, 404, "NoSuchVersion"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := tryGet(lc, repo, tc.key, func(in *s3.GetObjectInput) { in.VersionId = aws.String(tc.vid) })
				wantErr(t, err, tc.status, tc.code)
				_, err = lc.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String(tc.key), VersionId: aws.String(tc.vid)})
				wantErr(t, err, tc.status, "")
			})
		}
		got, _ := get(t, lc, repo, "shared/launch/a.txt", func(in *s3.GetObjectInput) { in.VersionId = aws.String(w.fork) })
		wantBytes(t, got, []byte("launch-a"))
		_, _, err := tryGet(lc, repo, "shared/launch/staged-on-main")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
		// Deleting main's versions through the fork deletes nothing.
		for _, vid := range []string{w.mainV, w.after} {
			_, err := lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/a.txt"), VersionId: aws.String(vid)})
			if err != nil && (errStatus(err) < 400 || errStatus(err) >= 500) { // a commit ID is refused by its form
				t.Errorf("DELETE main's version %s: %v", vid, err)
			}
		}
		out, err := lc.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(repo), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
			{Key: aws.String("shared/launch/a.txt"), VersionId: aws.String(w.mainV)},
			{Key: aws.String("shared/launch/staged-on-main"), VersionId: aws.String(w.stagedV)}}}})
		must(t, err)
		_ = out
		got, _ = get(t, w.own, repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("main-after-fork"))
		got, _ = get(t, w.own, repo, "shared/launch/a.txt", func(in *s3.GetObjectInput) { in.VersionId = aws.String(w.mainV) })
		wantBytes(t, got, []byte("main-after-fork"))
		got, _ = get(t, w.own, repo, "shared/launch/staged-on-main")
		wantBytes(t, got, []byte("staged"))
		got, _ = get(t, lc, repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("launch-a"))
	})

	t.Run("OtherBranchesAndRepositories", func(t *testing.T) {
		onMain := leaseS3(t, w.srv, li, onBranch("main"))
		for _, tc := range []struct {
			name   string
			c      *s3.Client
			bucket string
		}{
			{"HeaderMain", onMain, repo},
			{"AliasMain", lc, alias(repo, "main")},
			{"AliasOtherBranch", lc, alias(repo, "agent/run-other")},
			{"OtherRepo", lc, "other"},
			{"OtherRepoAlias", lc, alias("other", "main")},
			{"Missing", lc, "nosuchrepo"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := tryGet(tc.c, tc.bucket, "shared/launch/a.txt")
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
				_, err = tc.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String("shared/launch/a.txt")})
				wantErr(t, err, http.StatusNotFound, "")
				_, err = tc.c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(tc.bucket), Key: aws.String("shared/launch/x"), Body: strings.NewReader("x")})
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
				_, err = tc.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(tc.bucket)})
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
				_, err = tc.c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(tc.bucket)})
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
				_, err = tc.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(tc.bucket)})
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
				_, err = tc.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(tc.bucket)})
				wantErr(t, err, http.StatusNotFound, "")
				_, err = tc.c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(tc.bucket)})
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
				_, err = tc.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(tc.bucket), Key: aws.String("shared/launch/x")})
				wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
			})
		}
		got, _ := get(t, w.own, repo, "shared/launch/a.txt")
		wantBytes(t, got, []byte("main-after-fork"))
		_, err := w.own.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("other"), Key: aws.String("shared/launch/x")})
		wantErr(t, err, http.StatusNotFound, "")
		// Its own branch by alias and header works.
		_, err = leaseS3(t, w.srv, li, onBranch(li.Branch)).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(repo)})
		must(t, err)
		_, err = lc.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(alias(repo, li.Branch))})
		must(t, err)
	})

	t.Run("ListBuckets", func(t *testing.T) {
		out, err := lc.ListBuckets(ctx, &s3.ListBucketsInput{})
		must(t, err)
		var names []string
		for _, b := range out.Buckets {
			names = append(names, aws.ToString(b.Name))
		}
		if !slices.Equal(names, []string{repo}) {
			t.Fatalf("lease lists buckets %q, want only %q", names, repo)
		}
	})

	t.Run("BucketConfigurationRefused", func(t *testing.T) {
		_, err := lc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("newbucket")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, err = lc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("other")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied") // same answer as a missing one
		_, err = lc.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(repo)})
		if err == nil {
			t.Fatal("lease CreateBucket of its own repository succeeded")
		}
		_, err = lc.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(repo)})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, err = lc.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("other")})
		wantErr(t, err, http.StatusNotFound, "NoSuchBucket")
		_, err = lc.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(repo),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		_, err = lc.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(repo), ACL: types.BucketCannedACLPrivate})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		out, err := w.own.ListBuckets(ctx, &s3.ListBucketsInput{})
		must(t, err)
		var names []string
		for _, b := range out.Buckets {
			names = append(names, aws.ToString(b.Name))
		}
		if !slices.Equal(names, []string{"other", repo}) {
			t.Fatalf("owner's buckets %q after the lease's attempts", names)
		}
	})

	t.Run("PresignedURLs", func(t *testing.T) {
		pc := s3.NewPresignClient(lc)
		g, err := pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/a.txt")}, s3.WithPresignExpires(5*time.Minute))
		must(t, err)
		st, body := httpGet(t, g.URL, nil)
		if st != 200 || string(body) != "launch-a" {
			t.Fatalf("presigned GET: %d %s", st, body)
		}
		// An unsigned x-nas-branch cannot redirect it to main.
		st, body = httpGet(t, g.URL, http.Header{"X-Nas-Branch": {"main"}})
		if st != http.StatusForbidden || !strings.Contains(string(body), "headers present in the request which were not signed") {
			t.Fatalf("presigned GET with an unsigned x-nas-branch: %d %s", st, body)
		}
		// Pointed at another key or bucket, the signature fails.
		u, _ := url.Parse(g.URL)
		u.Path = "/" + repo + "/finance/x"
		st, body = httpGet(t, u.String(), nil)
		if st != http.StatusForbidden || xmlCode(body) != "SignatureDoesNotMatch" {
			t.Fatalf("presigned GET moved to a hidden key: %d %s", st, body)
		}
		g, err = pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("finance/x")}, s3.WithPresignExpires(5*time.Minute))
		must(t, err)
		st, body = httpGet(t, g.URL, nil)
		if st != http.StatusNotFound || xmlCode(body) != "NoSuchKey" {
			t.Fatalf("presigned GET of a hidden key: %d %s", st, body)
		}
		g, err = pc.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(alias(repo, "main")), Key: aws.String("shared/launch/a.txt")}, s3.WithPresignExpires(5*time.Minute))
		must(t, err)
		st, body = httpGet(t, g.URL, nil)
		if st != http.StatusNotFound || xmlCode(body) != "NoSuchBucket" {
			t.Fatalf("presigned GET on main: %d %s", st, body)
		}
		p, err := pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/presigned")}, s3.WithPresignExpires(5*time.Minute))
		must(t, err)
		if st, body := presignedPut(t, p.URL, p.SignedHeader, []byte("via-url")); st != 200 {
			t.Fatalf("presigned PUT: %d %s", st, body)
		}
		ownerHas(t, w.own, repo, li.Branch, "shared/launch/presigned", []byte("via-url"))
		p, err = pc.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("finance/presigned")}, s3.WithPresignExpires(5*time.Minute))
		must(t, err)
		if st, body := presignedPut(t, p.URL, p.SignedHeader, []byte("via-url")); st != 404 {
			t.Fatalf("presigned PUT of a hidden key: %d %s", st, body)
		}
	})

	// Section 2: visible but not granted answers AccessDenied.
	t.Run("Actions", func(t *testing.T) {
		t.Run("ReadOnlyPath", func(t *testing.T) {
			_, err := lc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/new"), Body: strings.NewReader("x")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = lc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/r.txt"), Body: strings.NewReader("x")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = lc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/r.txt")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = lc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/copied"), CopySource: aws.String(repo + "/shared/launch/a.txt")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = lc.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/mp")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			out, err := lc.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(repo),
				Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("shared/readonly/r.txt")}}}})
			must(t, err)
			if len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "AccessDenied" {
				t.Fatalf("DeleteObjects on a read-only path: %+v", out)
			}
			ownerHas(t, w.own, repo, li.Branch, "shared/readonly/r.txt", []byte("readonly-r"))
			_, err = w.ownBr.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/readonly/copied")})
			wantErr(t, err, http.StatusNotFound, "")
			// Copying out of it into a writable path is reading: allowed.
			_, err = lc.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/from-ro"), CopySource: aws.String(repo + "/shared/readonly/r.txt")})
			must(t, err)
		})
		t.Run("NoDelete", func(t *testing.T) {
			nd := w.oc.newLease(map[string]any{"repo": repo, "role": "nodelete", "branch": li.Branch, "ttl": "1h",
				"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read", "write"}})
			ndc := leaseS3(t, w.srv, nd)
			put(t, ndc, repo, "shared/launch/nd.txt", []byte("nd"))
			_, err := ndc.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/nd.txt")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			out, err := ndc.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(repo), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
				{Key: aws.String("shared/launch/nd.txt")}, {Key: aws.String("shared/launch/a.txt")}}}})
			must(t, err)
			if len(out.Deleted) != 0 || len(out.Errors) != 2 {
				t.Fatalf("DeleteObjects without delete: deleted %d, errors %d", len(out.Deleted), len(out.Errors))
			}
			for _, e := range out.Errors {
				if aws.ToString(e.Code) != "AccessDenied" {
					t.Errorf("DeleteObjects without delete: %s answered %s", aws.ToString(e.Key), aws.ToString(e.Code))
				}
			}
			ownerHas(t, w.own, repo, li.Branch, "shared/launch/nd.txt", []byte("nd"))
			ownerHas(t, w.own, repo, li.Branch, "shared/launch/a.txt", []byte("launch-a"))
		})
		t.Run("NoList", func(t *testing.T) {
			nl := w.oc.newLease(map[string]any{"repo": repo, "role": "nolist", "branch": li.Branch, "ttl": "1h",
				"paths": []string{"shared/launch/**"}, "actions": []string{"read"}})
			nlc := leaseS3(t, w.srv, nl)
			_, err := nlc.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(repo)})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = nlc.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(repo), Prefix: aws.String("shared/launch/")})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = nlc.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(repo)})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			_, err = nlc.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(repo)})
			wantErr(t, err, http.StatusForbidden, "AccessDenied")
			got, _ := get(t, nlc, repo, "shared/launch/a.txt")
			wantBytes(t, got, []byte("launch-a"))
		})
	})
}

// httpGet GETs a URL with extra (unsigned) headers.
func httpGet(t testing.TB, u string, h http.Header) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	must(t, err)
	for k, vs := range h {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// presignedPut sends body to a presigned PUT URL with its signed headers.
func presignedPut(t testing.TB, u string, signed http.Header, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	must(t, err)
	for k, vs := range signed {
		if !strings.EqualFold(k, "host") {
			req.Header[k] = vs
		}
	}
	st, _, b := do(t, req)
	return st, b
}
