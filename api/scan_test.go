package api_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// multipart uploads key from parts, uploading them in the order given
// (a number may repeat: the last upload wins) and completing in number
// order; it answers the owner's HEAD sensitivity of the result.
func multipart(t *testing.T, owner *s3.Client, key string, parts []string, numbers []int32) string {
	t.Helper()
	ctx := context.Background()
	up, err := owner.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("mpt"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	etags := map[int32]*string{}
	for i, body := range parts {
		p, err := owner.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("mpt"), Key: aws.String(key), UploadId: up.UploadId,
			PartNumber: aws.Int32(numbers[i]), Body: bytes.NewReader([]byte(body))})
		if err != nil {
			t.Fatal(err)
		}
		etags[numbers[i]] = p.ETag
	}
	var done []s3types.CompletedPart
	for n := int32(1); n <= int32(len(etags)); n++ {
		done = append(done, s3types.CompletedPart{ETag: etags[n], PartNumber: aws.Int32(n)})
	}
	if _, err := owner.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("mpt"), Key: aws.String(key),
		UploadId: up.UploadId, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: done}}); err != nil {
		t.Fatal(err)
	}
	h, err := owner.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpt"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	return h.Metadata["nas-sensitivity"]
}

// TestSecretAcrossParts: an AWS key split across a part boundary labels
// the completed object secret, whatever order the parts came in; an
// ordinary multipart stays unlabelled, and a re-uploaded part that
// replaces the boundary decides.
func TestSecretAcrossParts(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "mpt", "protected": false})
	owner := s3Of(c, c.creds)
	filler := strings.Repeat("plain words and numbers 1024 ", (5<<20)/29+1)
	key := "AKIA" + "IOSFODNN7" + "EXAMPLE"
	first := filler + "export AWS_ACCESS_KEY_ID=" + key[:9]
	second := key[9:] + "\nand the rest\n"
	plain := "nothing here\n"
	for _, c := range []struct {
		name    string
		parts   []string
		numbers []int32
		want    string
	}{
		{"split", []string{first, second}, []int32{1, 2}, "secret"},
		{"split, parts out of order", []string{second, first}, []int32{2, 1}, "secret"},
		{"plain", []string{filler, plain}, []int32{1, 2}, ""},
		{"the boundary re-uploaded away", []string{first, second, plain}, []int32{1, 2, 2}, ""},
		{"the boundary re-uploaded in", []string{first, plain, second}, []int32{1, 2, 2}, "secret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := multipart(t, owner, "big/"+strings.ReplaceAll(c.name, " ", "-"), c.parts, c.numbers); got != c.want {
				t.Fatalf("sensitivity %q, want %q", got, c.want)
			}
		})
	}
}

// TestComposeScanned: compose labels its output secret when its new
// bytes hold a key, or when a key is split across two pieces (new bytes
// and a range of a stored object); an ordinary compose stays unlabelled.
func TestComposeScanned(t *testing.T) {
	c := newClient(t)
	c.ok("repo/create", map[string]any{"repo": "mpt", "protected": false})
	owner := s3Of(c, c.creds)
	ctx := context.Background()
	key := "AKIA" + "IOSFODNN7" + "EXAMPLE"
	stored := key[9:] + "\n" + strings.Repeat("plain words ", 200)
	if _, err := owner.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("mpt"), Key: aws.String("tail.txt"), Body: strings.NewReader(stored)}); err != nil {
		t.Fatal(err)
	}
	data := func(s string) map[string]any { return map[string]any{"data": b64(s)} }
	rng := map[string]any{"key": "tail.txt", "offset": 0, "length": len(stored)}
	for _, cs := range []struct {
		name string
		segs []map[string]any
		want string
	}{
		{"inline", []map[string]any{data("id=" + key + "\n")}, "secret"},
		{"split inline", []map[string]any{data("id=" + key[:5]), data(key[5:] + "\n")}, "secret"},
		{"split inline and range", []map[string]any{data("id=" + key[:9]), rng}, "secret"},
		{"plain", []map[string]any{data("id=nothing "), rng}, ""},
	} {
		t.Run(cs.name, func(t *testing.T) {
			k := "c/" + strings.ReplaceAll(cs.name, " ", "-")
			c.ok("object/compose", map[string]any{"repo": "mpt", "key": k, "segments": cs.segs})
			h, err := owner.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpt"), Key: aws.String(k)})
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Metadata["nas-sensitivity"]; got != cs.want {
				t.Fatalf("sensitivity %q, want %q", got, cs.want)
			}
		})
	}
}
