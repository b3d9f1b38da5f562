package e2e_test

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
)

// TestDirectWrites runs a gateway with --direct-writes: objects around
// the 1 MiB block that goes through the page cache before the direct
// blocks start, a multipart object, and ranges across block boundaries
// all read back byte for byte, and again after a restart, from the disk.
func TestDirectWrites(t *testing.T) {
	opts := nastest.Options{DirectWrites: true, Gateways: 1}
	srv := nastest.Start(t, opts)
	c := client(t, srv)
	const b = "direct"
	createBucket(t, c, b)
	objects := map[string][]byte{}
	for _, n := range []int{1<<20 - 1, 1 << 20, 1<<20 + 1, 5<<20 + 4095, 9<<20 + 3} {
		key := fmt.Sprintf("put/%d", n)
		objects[key] = randBytes(key, n)
		out := put(t, c, b, key, objects[key])
		if got := aws.ToString(out.ETag); got != etagOf(objects[key]) {
			t.Errorf("%s: ETag %s, want %s", key, got, etagOf(objects[key]))
		}
	}
	m := createMPU(t, c, b, "multipart")
	p1, p2 := randBytes("p1", 6<<20+1), randBytes("p2", 2<<20+7)
	m.part(1, p1)
	m.part(2, p2)
	m.complete()
	objects["multipart"] = append(append([]byte{}, p1...), p2...)

	check := func(t *testing.T, c *s3.Client) {
		for key, want := range objects {
			got, _ := get(t, c, b, key)
			wantBytes(t, got, want)
			from, to := len(want)/2-3, min(len(want)-1, len(want)/2+(1<<20)+5)
			got, _ = get(t, c, b, key, func(in *s3.GetObjectInput) {
				in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", from, to))
			})
			wantBytes(t, got, want[from:to+1])
		}
	}
	check(t, c)
	srv.Stop()
	opts.DataDir = srv.DataDir
	check(t, client(t, nastest.Start(t, opts)))
}
