package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

	"github.com/agentnas/nas/nastest"
)

// listKeys is the fixture of TestListObjects, in S3 (byte) order.
var listKeys = []string{
	"a.txt",
	"b/1",
	"b/2",
	"b/c/3",
	"c|x|1",
	"c|x|2",
	"c|y",
	"d/plus+/k",
	"d/with space/é",
	"z",
}

// page is one listing page flattened: keys and common prefixes.
type page struct {
	keys, prefixes []string
}

func v2Page(out *s3.ListObjectsV2Output) page {
	var p page
	for _, o := range out.Contents {
		p.keys = append(p.keys, aws.ToString(o.Key))
	}
	for _, cp := range out.CommonPrefixes {
		p.prefixes = append(p.prefixes, aws.ToString(cp.Prefix))
	}
	return p
}

func v1Page(out *s3.ListObjectsOutput) page {
	var p page
	for _, o := range out.Contents {
		p.keys = append(p.keys, aws.ToString(o.Key))
	}
	for _, cp := range out.CommonPrefixes {
		p.prefixes = append(p.prefixes, aws.ToString(cp.Prefix))
	}
	return p
}

func TestListObjects(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "listing"
	createBucket(t, c, b)
	// Write in reverse so order comes from the server, not from us.
	for _, k := range slices.Backward(listKeys) {
		put(t, c, b, k, []byte(k))
	}

	for _, tc := range []struct {
		name, prefix, delim string
		want                page
	}{
		{"all", "", "", page{keys: listKeys}},
		{"prefix", "b/", "", page{keys: []string{"b/1", "b/2", "b/c/3"}}},
		{"delimiter", "", "/", page{
			keys:     []string{"a.txt", "c|x|1", "c|x|2", "c|y", "z"},
			prefixes: []string{"b/", "d/"}}},
		{"prefix+delimiter", "b/", "/", page{keys: []string{"b/1", "b/2"}, prefixes: []string{"b/c/"}}},
		{"prefix without slash", "d", "/", page{prefixes: []string{"d/"}}},
		{"pipe delimiter", "", "|", page{
			keys:     []string{"a.txt", "b/1", "b/2", "b/c/3", "d/plus+/k", "d/with space/é", "z"},
			prefixes: []string{"c|"}}},
		{"pipe prefix+delimiter", "c|", "|", page{keys: []string{"c|y"}, prefixes: []string{"c|x|"}}},
		{"multi-char delimiter", "", "/w", page{
			keys:     []string{"a.txt", "b/1", "b/2", "b/c/3", "c|x|1", "c|x|2", "c|y", "d/plus+/k", "z"},
			prefixes: []string{"d/w"}}},
		{"no match", "nothing", "/", page{}},
	} {
		t.Run("V2/"+tc.name, func(t *testing.T) {
			out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String(tc.prefix), Delimiter: aws.String(tc.delim)})
			must(t, err)
			if got := v2Page(out); !equalPage(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if aws.ToBool(out.IsTruncated) {
				t.Error("IsTruncated")
			}
			if int(aws.ToInt32(out.KeyCount)) != len(tc.want.keys)+len(tc.want.prefixes) {
				t.Errorf("KeyCount = %d", aws.ToInt32(out.KeyCount))
			}
			if aws.ToString(out.Prefix) != tc.prefix || aws.ToString(out.Delimiter) != tc.delim || aws.ToString(out.Name) != b {
				t.Errorf("echo: Name %q Prefix %q Delimiter %q", aws.ToString(out.Name), aws.ToString(out.Prefix), aws.ToString(out.Delimiter))
			}
		})
		t.Run("V1/"+tc.name, func(t *testing.T) {
			out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String(tc.prefix), Delimiter: aws.String(tc.delim)})
			must(t, err)
			if got := v1Page(out); !equalPage(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if aws.ToBool(out.IsTruncated) {
				t.Error("IsTruncated")
			}
		})
	}

	t.Run("V2/MaxKeysPagination", func(t *testing.T) {
		for _, delim := range []string{"", "/"} {
			var got []string
			var token *string
			pages := 0
			for {
				out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), MaxKeys: aws.Int32(2),
					Delimiter: aws.String(delim), ContinuationToken: token})
				must(t, err)
				pages++
				p := v2Page(out)
				if n := len(p.keys) + len(p.prefixes); n > 2 || int(aws.ToInt32(out.KeyCount)) != n {
					t.Fatalf("page of %d entries, KeyCount %d", n, aws.ToInt32(out.KeyCount))
				}
				if aws.ToString(out.ContinuationToken) != aws.ToString(token) {
					t.Errorf("ContinuationToken echo = %q, want %q", aws.ToString(out.ContinuationToken), aws.ToString(token))
				}
				got = append(got, mergeSorted(p)...)
				if !aws.ToBool(out.IsTruncated) {
					if out.NextContinuationToken != nil {
						t.Error("last page has a NextContinuationToken")
					}
					break
				}
				token = out.NextContinuationToken
				if token == nil || pages > 20 {
					t.Fatal("truncated page without NextContinuationToken")
				}
			}
			want := listKeys
			if delim == "/" {
				want = []string{"a.txt", "b/", "c|x|1", "c|x|2", "c|y", "d/", "z"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("delimiter %q: paged %v, want %v", delim, got, want)
			}
		}
	})
	t.Run("V2/StartAfter", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), StartAfter: aws.String("b/2")})
		must(t, err)
		if got := v2Page(out).keys; !slices.Equal(got, listKeys[3:]) {
			t.Errorf("start-after b/2: %v", got)
		}
		if aws.ToString(out.StartAfter) != "b/2" {
			t.Errorf("StartAfter echo = %q", aws.ToString(out.StartAfter))
		}
		// A start-after that is not a key, and one past the end.
		out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), StartAfter: aws.String("c")})
		must(t, err)
		if got := v2Page(out).keys; !slices.Equal(got, listKeys[4:]) {
			t.Errorf("start-after c: %v", got)
		}
		out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), StartAfter: aws.String("zz")})
		must(t, err)
		if len(out.Contents) != 0 {
			t.Errorf("start-after zz: %v", v2Page(out).keys)
		}
	})
	t.Run("V1/MarkerPagination", func(t *testing.T) {
		for _, delim := range []string{"", "/"} {
			var got []string
			marker := ""
			for i := 0; ; i++ {
				out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), MaxKeys: aws.Int32(3),
					Delimiter: aws.String(delim), Marker: aws.String(marker)})
				must(t, err)
				p := v1Page(out)
				entries := mergeSorted(p)
				got = append(got, entries...)
				if aws.ToString(out.Marker) != marker {
					t.Errorf("Marker echo = %q, want %q", aws.ToString(out.Marker), marker)
				}
				if !aws.ToBool(out.IsTruncated) {
					break
				}
				if i > 20 || len(entries) == 0 {
					t.Fatal("pagination does not advance")
				}
				// S3 sends NextMarker only with a delimiter; without one the
				// client continues from the last key.
				if delim != "" {
					if out.NextMarker == nil {
						t.Fatal("truncated V1 page with a delimiter has no NextMarker")
					}
					if want := entries[len(entries)-1]; aws.ToString(out.NextMarker) != want {
						t.Errorf("NextMarker = %q, want %q", aws.ToString(out.NextMarker), want)
					}
					marker = aws.ToString(out.NextMarker)
				} else {
					marker = p.keys[len(p.keys)-1]
				}
			}
			want := listKeys
			if delim == "/" {
				want = []string{"a.txt", "b/", "c|x|1", "c|x|2", "c|y", "d/", "z"}
			}
			if !slices.Equal(got, want) {
				t.Errorf("delimiter %q: paged %v, want %v", delim, got, want)
			}
		}
	})
	t.Run("EncodingTypeURL", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("d/"), EncodingType: types.EncodingTypeUrl})
		must(t, err)
		if out.EncodingType != types.EncodingTypeUrl {
			t.Errorf("EncodingType = %q", out.EncodingType)
		}
		var raw, decoded []string
		for _, o := range out.Contents {
			k := aws.ToString(o.Key)
			raw = append(raw, k)
			d, err := url.QueryUnescape(k)
			must(t, err)
			decoded = append(decoded, d)
		}
		if !slices.Equal(decoded, []string{"d/plus+/k", "d/with space/é"}) {
			t.Errorf("decoded keys %q (raw %q)", decoded, raw)
		}
		// S3 encodes a space as %20 and a literal '+' as %2B.
		if !slices.Equal(raw, []string{"d/plus%2B/k", "d/with%20space/%C3%A9"}) {
			t.Errorf("raw encoded keys %q", raw)
		}
		// Delimiter and common prefixes are encoded too.
		out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("d/"), Delimiter: aws.String("/"),
			EncodingType: types.EncodingTypeUrl})
		must(t, err)
		var prefixes []string
		for _, cp := range out.CommonPrefixes {
			d, err := url.QueryUnescape(aws.ToString(cp.Prefix))
			must(t, err)
			prefixes = append(prefixes, d)
		}
		if !slices.Equal(prefixes, []string{"d/plus+/", "d/with space/"}) {
			t.Errorf("decoded prefixes %q", prefixes)
		}
		v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String("d/w"), EncodingType: types.EncodingTypeUrl})
		must(t, err)
		if len(v1.Contents) != 1 {
			t.Fatalf("V1 url listing: %d keys", len(v1.Contents))
		}
		if d, _ := url.QueryUnescape(aws.ToString(v1.Contents[0].Key)); d != "d/with space/é" {
			t.Errorf("V1 decoded key %q", d)
		}
	})
	t.Run("BadArguments", func(t *testing.T) {
		_, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), MaxKeys: aws.Int32(-1)})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), EncodingType: "base64"})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
		_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), ContinuationToken: aws.String("!!not a token!!")})
		wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	})
	t.Run("MaxKeysZero", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), MaxKeys: aws.Int32(0)})
		must(t, err)
		if len(out.Contents) != 0 || aws.ToInt32(out.KeyCount) != 0 {
			t.Errorf("max-keys 0 returned %d keys", len(out.Contents))
		}
	})
	t.Run("FetchOwner", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("a")})
		must(t, err)
		if len(out.Contents) != 1 || out.Contents[0].Owner != nil {
			t.Errorf("V2 without fetch-owner: %+v", out.Contents)
		}
		out, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("a"), FetchOwner: aws.Bool(true)})
		must(t, err)
		if len(out.Contents) != 1 || out.Contents[0].Owner == nil || aws.ToString(out.Contents[0].Owner.ID) == "" {
			t.Errorf("V2 with fetch-owner: %+v", out.Contents)
		}
		v1, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Prefix: aws.String("a")})
		must(t, err)
		if len(v1.Contents) != 1 || v1.Contents[0].Owner == nil {
			t.Errorf("V1 lists no owner: %+v", v1.Contents)
		}
	})
	t.Run("Fields", func(t *testing.T) {
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b), Prefix: aws.String("z")})
		must(t, err)
		o := out.Contents[0]
		if aws.ToString(o.ETag) != etagOf([]byte("z")) || aws.ToInt64(o.Size) != 1 || o.LastModified == nil || o.StorageClass != types.ObjectStorageClassStandard {
			t.Errorf("listed object %+v", o)
		}
	})
	t.Run("Minio", func(t *testing.T) {
		// minio-go lists with encoding-type=url and decodes.
		mc := newMinio(t, srv)
		var got []string
		for o := range mc.ListObjects(ctx, b, minio.ListObjectsOptions{Prefix: "d/", Recursive: true}) {
			must(t, o.Err)
			got = append(got, o.Key)
		}
		if !slices.Equal(got, []string{"d/plus+/k", "d/with space/é"}) {
			t.Errorf("minio recursive list %q", got)
		}
		got = nil
		for o := range mc.ListObjects(ctx, b, minio.ListObjectsOptions{UseV1: true}) {
			must(t, o.Err)
			got = append(got, o.Key)
		}
		slices.Sort(got) // minio-go yields a page's keys before its prefixes
		if !slices.Equal(got, []string{"a.txt", "b/", "c|x|1", "c|x|2", "c|y", "d/", "z"}) {
			t.Errorf("minio V1 delimited list %q", got)
		}
	})
}

// mergeSorted interleaves a page's keys and prefixes in key order.
func mergeSorted(p page) []string {
	all := append(append([]string(nil), p.keys...), p.prefixes...)
	slices.Sort(all)
	return all
}

func equalPage(a, b page) bool {
	return slices.Equal(a.keys, b.keys) && slices.Equal(a.prefixes, b.prefixes)
}

// TestListMany pages through a few thousand keys, written concurrently, with
// every pagination scheme.
func TestListMany(t *testing.T) {
	srv := nastest.Start(t)
	c := client(t, srv)
	ctx := context.Background()
	const b = "many"
	createBucket(t, c, b)
	dirs, per := 25, 100 // 2,500 keys
	if testing.Short() {
		dirs, per = 10, 30
	}
	var want []string
	for d := range dirs {
		for i := range per {
			want = append(want, fmt.Sprintf("dir%02d/obj%04d", d, i))
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range want {
		g.Go(func() error {
			_, err := c.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader(k)})
			return err
		})
	}
	must(t, g.Wait())
	slices.Sort(want)

	t.Run("V2Paginator", func(t *testing.T) {
		for _, max := range []int32{1000, 333} {
			var got []string
			pages := 0
			p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(b), MaxKeys: aws.Int32(max)})
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				must(t, err)
				pages++
				if len(out.Contents) > int(max) {
					t.Fatalf("page of %d > max-keys %d", len(out.Contents), max)
				}
				got = append(got, v2Page(out).keys...)
			}
			if !slices.Equal(got, want) {
				t.Errorf("max-keys %d: listed %d keys, want %d (sorted: %v)", max, len(got), len(want), slices.IsSorted(got))
			}
			if wantPages := (len(want) + int(max) - 1) / int(max); pages != wantPages {
				t.Errorf("max-keys %d: %d pages, want %d", max, pages, wantPages)
			}
		}
	})
	t.Run("V2Delimited", func(t *testing.T) {
		var prefixes []string
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(b), Delimiter: aws.String("/"), MaxKeys: aws.Int32(7)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			must(t, err)
			if len(out.Contents) != 0 {
				t.Fatalf("delimited listing has keys at the top: %v", v2Page(out).keys)
			}
			prefixes = append(prefixes, v2Page(out).prefixes...)
		}
		if len(prefixes) != dirs || prefixes[0] != "dir00/" || !slices.IsSorted(prefixes) {
			t.Errorf("prefixes %v", prefixes)
		}
	})
	t.Run("V1Marker", func(t *testing.T) {
		var got []string
		marker := ""
		for {
			out, err := c.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String(b), Marker: aws.String(marker), MaxKeys: aws.Int32(500)})
			must(t, err)
			keys := v1Page(out).keys
			got = append(got, keys...)
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			marker = keys[len(keys)-1]
		}
		if !slices.Equal(got, want) {
			t.Errorf("V1 listed %d keys, want %d", len(got), len(want))
		}
	})
	t.Run("Minio", func(t *testing.T) {
		mc := newMinio(t, srv)
		n := 0
		prev := ""
		for o := range mc.ListObjects(ctx, b, minio.ListObjectsOptions{Recursive: true}) {
			must(t, o.Err)
			if o.Key <= prev {
				t.Fatalf("minio listing out of order: %q after %q", o.Key, prev)
			}
			prev = o.Key
			n++
		}
		if n != len(want) {
			t.Errorf("minio listed %d keys, want %d", n, len(want))
		}
	})
}
