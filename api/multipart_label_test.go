package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestUploadPartCopyLabel: a part copied from a secret (by a label rule)
// or an external object carries its label into the completed object,
// joined with the other parts': the owner's HEAD shows secret and
// external, and a lease with a private ceiling cannot GET it.
func TestUploadPartCopyLabel(t *testing.T) {
	f := newGuardFixture(t)
	ctx := context.Background()
	f.c.ok("branch/unprotect", map[string]any{"repo": "grd", "name": "main"})
	big := strings.Repeat("x", 5<<20)
	f.put(t, f.owner, "web/big.html", big, nil)
	f.put(t, f.owner, "out/plain.txt", "plain", nil)
	key := aws.String("out/joined.bin")
	up, err := f.owner.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("grd"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	var done []s3types.CompletedPart
	// Every part but the last is at least 5 MiB.
	for i, src := range []string{"", "grd/web/big.html", "grd/vault/key.txt"} {
		n := aws.Int32(int32(i + 1))
		if src == "" {
			p, err := f.owner.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("grd"), Key: key, UploadId: up.UploadId,
				PartNumber: n, Body: strings.NewReader(big)})
			if err != nil {
				t.Fatal(err)
			}
			done = append(done, s3types.CompletedPart{ETag: p.ETag, PartNumber: n})
			continue
		}
		p, err := f.owner.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("grd"), Key: key, UploadId: up.UploadId,
			PartNumber: n, CopySource: aws.String(src)})
		if err != nil {
			t.Fatalf("copy part %s: %v", src, err)
		}
		done = append(done, s3types.CompletedPart{ETag: p.CopyPartResult.ETag, PartNumber: n})
	}
	if _, err := f.owner.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("grd"), Key: key,
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	h, err := f.owner.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("grd"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if h.Metadata["nas-sensitivity"] != "secret" || h.Metadata["nas-origin"] != "external" {
		t.Fatalf("the owner's HEAD of the joined object: labels %v", h.Metadata)
	}
	f.c.ok("commit/create", map[string]any{"repo": "grd", "branch": "main", "message": "joined"})
	_, ls3, br := f.lease(t, "reader", "private")
	onBranch := s3.WithAPIOptions(smithyhttp.AddHeaderValue("x-nas-branch", br))
	if _, err := ls3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("grd"), Key: aws.String("out/plain.txt")}, onBranch); err != nil {
		t.Fatalf("the lease's GET of an ordinary object beside it: %v", err)
	}
	if _, err := ls3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("grd"), Key: key}, onBranch); !isNoSuchKey(err) {
		t.Fatalf("a lease with a private ceiling GETs the joined secret: %v", err)
	}
}
