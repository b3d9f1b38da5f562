package e2e_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/agentnas/nas/nastest"
)

// Sections 7 and 8: budgets and share grants.

var budgetHeaderNames = []string{
	"x-nas-budget-remaining-bytes-read",
	"x-nas-budget-remaining-bytes-written",
	"x-nas-budget-remaining-requests",
}

// remaining reads the budget headers of a response; missing is -1.
func remaining(h http.Header) map[string]int64 {
	out := map[string]int64{}
	for _, n := range budgetHeaderNames {
		out[n] = -1
		if v := h.Get(n); v != "" {
			out[n], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return out
}

// respHeader is the HTTP header of an SDK response.
func respHeader(t testing.TB, md middleware.Metadata) http.Header {
	t.Helper()
	resp, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response)
	if !ok {
		t.Fatal("no raw response")
	}
	return resp.Header
}

// errHeader is the HTTP header of a failed SDK call.
func errHeader(t testing.TB, err error) http.Header {
	t.Helper()
	var re interface{ HTTPResponse() *smithyhttp.Response }
	if !errors.As(err, &re) || re.HTTPResponse() == nil {
		t.Fatalf("no HTTP response in %v", err)
	}
	return re.HTTPResponse().Header
}

// noChecksumValidation keeps a client from asking for checksums on GET
// (x-amz-checksum-mode), so error answers are parsed whatever headers they
// carry.
func noChecksumValidation(o *s3.Options) {
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
}

func TestLeaseBudgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "bud"
	createBucket(t, own, repo)
	obj60, obj30, secret := randBytes("sixty", 60), randBytes("thirty", 30), randBytes("secret", 64)
	put(t, own, repo, "shared/launch/obj60", obj60)
	put(t, own, repo, "shared/launch/obj30", obj30)
	put(t, own, repo, "shared/launch/secret.bin", secret)
	oc.commit(repo, "main", "seed")
	mk := func(t *testing.T, budgets map[string]any) (*leaseInfo, *s3.Client) {
		li := oc.as(t).newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h", "budgets": budgets,
			"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read", "write"}})
		return li, leaseS3(t, srv, li, noChecksumValidation)
	}

	t.Run("BytesRead", func(t *testing.T) {
		li, c := mk(t, map[string]any{"bytes_read": 100, "bytes_written": 1000, "requests": 1000})
		got, out := get(t, c, repo, "shared/launch/obj60")
		wantBytes(t, got, obj60)
		if r := remaining(respHeader(t, out.ResultMetadata)); r[budgetHeaderNames[0]] != 40 || r[budgetHeaderNames[1]] != 1000 || r[budgetHeaderNames[2]] < 0 {
			t.Errorf("remaining after 60 bytes: %v", r)
		}
		// 60 more would overspend: refused whole, before any byte.
		st, h, body := rawDo(t, http.MethodGet, srv.Endpoint+"/"+repo+"/shared/launch/obj60", nil, li.Creds, nil)
		if st != http.StatusForbidden || xmlCode(body) != "QuotaExceeded" || strings.Contains(string(body), string(obj60[:8])) {
			t.Fatalf("GET over the read budget: %d %q", st, body)
		}
		if r := remaining(h); r[budgetHeaderNames[0]] != 40 || r[budgetHeaderNames[1]] != 1000 || r[budgetHeaderNames[2]] < 0 {
			t.Errorf("remaining on QuotaExceeded: %v (%v)", r, h)
		}
		_, _, err := tryGet(c, repo, "shared/launch/obj60")
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		// A range that fits is served; then nothing more.
		got, _ = get(t, c, repo, "shared/launch/obj60", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=0-39") })
		wantBytes(t, got, obj60[:40])
		_, _, err = tryGet(c, repo, "shared/launch/obj30", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=0-0") })
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		if r := remaining(errHeader(t, err)); r[budgetHeaderNames[0]] != 0 {
			t.Errorf("remaining after spending the read budget: %v", r)
		}
		// An SDK validating response checksums (the default) must see
		// QuotaExceeded too: the refusal carries none of the object's
		// headers.
		t.Run("ErrorCarriesNoObjectHeaders", func(t *testing.T) {
			_, _, err := tryGet(leaseS3(t, srv, li), repo, "shared/launch/obj30")
			if errCode(err) != "QuotaExceeded" {
				t.Errorf("aws-sdk-go-v2 with checksum validation: %v", err)
			}
			st, h, body := rawDo(t, http.MethodGet, srv.Endpoint+"/"+repo+"/shared/launch/obj30", nil, li.Creds,
				http.Header{"X-Amz-Checksum-Mode": {"ENABLED"}})
			if st != http.StatusForbidden || xmlCode(body) != "QuotaExceeded" {
				t.Fatalf("GET over the read budget: %d %s", st, body)
			}
			for _, n := range []string{"X-Amz-Checksum-Crc32", "X-Amz-Checksum-Type", "X-Amz-Version-Id", "ETag", "Last-Modified", "Accept-Ranges"} {
				if v := h.Get(n); v != "" {
					t.Errorf("QuotaExceeded answer carries the object's %s: %s", n, v)
				}
			}
		})
		// Presigned URLs are charged too.
		g, err := s3.NewPresignClient(c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/obj30")})
		must(t, err)
		if st, body := httpGet(t, g.URL, nil); st != http.StatusForbidden || xmlCode(body) != "QuotaExceeded" {
			t.Fatalf("presigned GET over the read budget: %d %s", st, body)
		}
	})

	t.Run("Requests", func(t *testing.T) {
		li, c := mk(t, map[string]any{"requests": 3})
		_, out := get(t, c, repo, "shared/launch/obj30")
		if r := remaining(respHeader(t, out.ResultMetadata)); r[budgetHeaderNames[2]] != 2 {
			t.Errorf("remaining requests after one: %v", r)
		}
		_, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/obj30")})
		must(t, err)
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(repo)})
		must(t, err)
		_, _, err = tryGet(c, repo, "shared/launch/obj30")
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		if r := remaining(errHeader(t, err)); r[budgetHeaderNames[2]] != 0 {
			t.Errorf("remaining requests when spent: %v", r)
		}
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/late"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/obj30")})
		wantErr(t, err, http.StatusForbidden, "")
		leaseCtl(t, srv, li).fails("commit/create", map[string]any{"repo": repo, "branch": li.Branch, "message": "x", "allow_empty": true},
			http.StatusForbidden, "QuotaExceeded")
		// Nor can it mint a child with budget left.
		st, _ := leaseCtl(t, srv, li).call("lease/create", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}})
		if st == http.StatusOK {
			t.Fatal("a lease with its request budget spent minted a child")
		}
		_, err = newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}}).HeadObject(ctx,
			&s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/late")})
		wantErr(t, err, http.StatusNotFound, "")
	})

	t.Run("BytesWritten", func(t *testing.T) {
		li, c := mk(t, map[string]any{"bytes_written": 100})
		ownBr := newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}})
		out := put(t, c, repo, "shared/launch/w60", obj60)
		if r := remaining(respHeader(t, out.ResultMetadata)); r[budgetHeaderNames[1]] != 40 {
			t.Errorf("remaining after writing 60: %v", r)
		}
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/w60b"), Body: strings.NewReader(string(obj60))})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		_, err = ownBr.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/w60b")})
		wantErr(t, err, http.StatusNotFound, "")
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/copy60"), CopySource: aws.String(repo + "/shared/launch/obj60")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		_, err = ownBr.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/copy60")})
		wantErr(t, err, http.StatusNotFound, "")
		// Multipart parts are charged as they arrive.
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp")})
		must(t, err)
		_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: strings.NewReader(string(obj30))})
		must(t, err)
		_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(2), Body: strings.NewReader(string(obj30))})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		_, err = c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp"), UploadId: up.UploadId,
			PartNumber: aws.Int32(3), CopySource: aws.String(repo + "/shared/launch/obj30")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		parts, err := ownBr.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/mp"), UploadId: up.UploadId})
		must(t, err)
		if len(parts.Parts) != 1 {
			t.Fatalf("%d parts stored, want 1", len(parts.Parts))
		}
		// A small write that fits still goes through.
		put(t, c, repo, "shared/launch/w10", obj30[:10])
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/w1"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
	})

	t.Run("ChargedToAncestors", func(t *testing.T) {
		par, pc := mk(t, map[string]any{"bytes_read": 100})
		child := leaseCtl(t, srv, par).newLease(map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "budgets": map[string]any{"bytes_read": 80}})
		cc := leaseS3(t, srv, child)
		got, _ := get(t, cc, repo, "shared/launch/obj60")
		wantBytes(t, got, obj60)
		_, _, err := tryGet(pc, repo, "shared/launch/obj60")
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		got, _ = get(t, pc, repo, "shared/launch/obj30", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=0-29") })
		wantBytes(t, got, obj30)
		_, _, err = tryGet(cc, repo, "shared/launch/obj30", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=0-19") })
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded") // the parent has 10 left
		// A new child cannot get more than what is left.
		st, _ := leaseCtl(t, srv, par).call("lease/create", map[string]any{"paths": []string{"shared/launch/**"}, "actions": []string{"read"}, "budgets": map[string]any{"bytes_read": 50}})
		if st == http.StatusOK {
			t.Fatal("a child got more read budget than its parent has left")
		}
	})

	t.Run("UploadPartCopyReadsAreCharged", func(t *testing.T) {
		// Reading bytes through UploadPartCopy (its part ETag is the MD5 of
		// the copied range) must count against bytes_read like a GET.
		_, c := mk(t, map[string]any{"bytes_read": 30})
		got, _ := get(t, c, repo, "shared/launch/obj30")
		wantBytes(t, got, obj30)
		_, _, err := tryGet(c, repo, "shared/launch/secret.bin", func(in *s3.GetObjectInput) { in.Range = aws.String("bytes=0-0") })
		wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
		up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/oracle")})
		must(t, err)
		var md5s [256]string
		for i := range md5s {
			s := md5.Sum([]byte{byte(i)})
			md5s[i] = hex.EncodeToString(s[:])
		}
		var recovered []byte
		for i := 0; i < 8; i++ {
			out, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String(repo), Key: aws.String("shared/launch/oracle"), UploadId: up.UploadId,
				PartNumber: aws.Int32(1), CopySource: aws.String(repo + "/shared/launch/secret.bin"), CopySourceRange: aws.String(fmt.Sprintf("bytes=%d-%d", i, i))})
			if err != nil {
				wantErr(t, err, http.StatusForbidden, "QuotaExceeded")
				break
			}
			etag := strings.Trim(aws.ToString(out.CopyPartResult.ETag), `"`)
			if b := slices.Index(md5s[:], etag); b >= 0 {
				recovered = append(recovered, byte(b))
			}
		}
		if len(recovered) > 0 {
			t.Errorf("with its read budget spent, the lease read %d bytes of secret.bin through UploadPartCopy ETags (match: %v)",
				len(recovered), slices.Equal(recovered, secret[:len(recovered)]))
		}
	})
}

func TestLeaseShareGrants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := nastest.Start(t)
	own := client(t, srv)
	oc := ownerCtl(t, srv)
	const repo = "share"
	createBucket(t, own, repo)
	for _, k := range []string{"shared/grant/once.txt", "shared/grant/timed.txt", "shared/grant/never.txt", "shared/launch/a.txt"} {
		put(t, own, repo, k, []byte("content of "+k))
	}
	oc.commit(repo, "main", "seed")
	li := oc.newLease(map[string]any{"repo": repo, "role": "agent", "fork_from": "main", "ttl": "1h",
		"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read"}})
	c := leaseS3(t, srv, li)
	grant := func(t *testing.T, path, ttl string, single bool) map[string]any {
		return oc.as(t).ok("share/grant", map[string]any{"lease_id": li.ID, "path": path, "actions": []string{"list", "read"},
			"ttl": ttl, "single_use": single})["grant"].(map[string]any)
	}
	visible := func(t *testing.T, key string) bool {
		_, _, err := tryGet(c, repo, key)
		if err != nil {
			wantErr(t, err, http.StatusNotFound, "NoSuchKey")
			return false
		}
		return true
	}
	listed := func(t *testing.T) []string { return keysOf(t, c, repo, "shared/") }

	timed := grant(t, "shared/grant/timed.txt", "2s", false)
	timedExp, err := time.Parse(time.RFC3339Nano, timed["expires_at"].(string))
	must(t, err)

	t.Run("SingleUse", func(t *testing.T) {
		if _, _, err := tryGet(c, repo, "shared/grant/once.txt"); err == nil {
			t.Fatal("hidden before the grant is readable")
		}
		grant(t, "shared/grant/once.txt", "1h", true)
		if l := listed(t); !slices.Contains(l, "shared/grant/once.txt") || slices.Contains(l, "shared/grant/never.txt") {
			t.Fatalf("listing with the grant: %q", l)
		}
		// Reading metadata first (tags, attributes) leaves the grant for the GET.
		_, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String(repo), Key: aws.String("shared/grant/once.txt")})
		must(t, err)
		got, _ := get(t, c, repo, "shared/grant/once.txt")
		wantBytes(t, got, []byte("content of shared/grant/once.txt"))
		if visible(t, "shared/grant/once.txt") {
			t.Fatal("a single-use grant served a second read")
		}
		if slices.Contains(listed(t), "shared/grant/once.txt") {
			t.Fatal("a used grant still lists its path")
		}
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(repo), Prefix: aws.String("shared/grant/"), Delimiter: aws.String("/")})
		must(t, err)
	})

	t.Run("Expiry", func(t *testing.T) {
		for range 2 {
			if !visible(t, "shared/grant/timed.txt") {
				t.Fatal("a live grant does not serve")
			}
		}
		if !slices.Contains(listed(t), "shared/grant/timed.txt") {
			t.Fatal("a live grant does not list")
		}
		waitUntil(timedExp)
		if visible(t, "shared/grant/timed.txt") {
			t.Fatal("an expired grant still serves")
		}
		l := listed(t)
		if slices.Contains(l, "shared/grant/timed.txt") {
			t.Fatal("an expired grant still lists")
		}
		for _, k := range l {
			if !strings.HasPrefix(k, "shared/launch/") {
				t.Fatalf("listing shows %q", k)
			}
		}
	})

	t.Run("NotBeyondTheLease", func(t *testing.T) {
		g := grant(t, "shared/grant/never.txt", "48h", false)
		exp, err := time.Parse(time.RFC3339Nano, g["expires_at"].(string))
		must(t, err)
		if exp.After(li.ExpiresAt.Add(time.Second)) {
			t.Fatalf("grant expires %s, after its lease %s", exp, li.ExpiresAt)
		}
		// Actions are the grant's: list and read, not write.
		_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(repo), Key: aws.String("shared/grant/never.txt"), Body: strings.NewReader("x")})
		wantErr(t, err, http.StatusForbidden, "AccessDenied")
		// Other leases do not see it.
		other := oc.as(t).newLease(map[string]any{"repo": repo, "role": "agent", "branch": li.Branch, "ttl": "1h",
			"paths": []string{"shared/launch/**"}, "actions": []string{"list", "read"}})
		_, _, err = tryGet(leaseS3(t, srv, other), repo, "shared/grant/never.txt")
		wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	})

	t.Run("SingleUseUnderConcurrency", func(t *testing.T) {
		// Concurrent reads through one single-use grant: at most one may
		// be served. A few rounds, so a lucky schedule does not hide a race.
		const rounds, n = 5, 24
		for r := range rounds {
			key := fmt.Sprintf("shared/grant/race-%d.txt", r)
			put(t, newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(li.Branch)}}), repo, key, []byte("race"))
			grant(t, key, "1h", true)
			var wg sync.WaitGroup
			var mu sync.Mutex
			served := 0
			start := make(chan struct{})
			for range n {
				wg.Go(func() {
					<-start
					if _, _, err := tryGet(c, repo, key); err == nil {
						mu.Lock()
						served++
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			if served > 1 {
				t.Fatalf("round %d: a single-use grant served %d of %d concurrent reads, want at most 1", r, served, n)
			}
		}
	})
}
