package source_test

import (
	"encoding/base64"
	"testing"

	"github.com/agentnas/nas/source"
)

// TestComposeLazy: object/compose (a small edit to a large file through
// the mount) works on an object of an attached source that was never read:
// the gateway fetches it once and shares its chunks.
func TestComposeLazy(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	big := randomBytes(21, 3<<20)
	rm.put(t, "remote", "r/big.bin", big)
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	gw.attach(t, "data", "ds/", "s3://remote/r", rm.URL, nil)
	out := gw.owner(t, "object/compose", map[string]any{"repo": "data", "key": "edited.bin", "segments": []map[string]any{
		{"key": "ds/big.bin", "offset": 0, "length": 1 << 20},
		{"data": base64.StdEncoding.EncodeToString([]byte("EDIT"))},
		{"key": "ds/big.bin", "offset": 1<<20 + 4, "length": len(big) - (1<<20 + 4)},
	}})
	if out["size"] != float64(len(big)) {
		t.Fatalf("compose answered %v", out)
	}
	want := append(append(append([]byte{}, big[:1<<20]...), "EDIT"...), big[1<<20+4:]...)
	mustGet(t, gw.S3, "data", "edited.bin", want)
	mustGet(t, gw.S3, "data", "ds/big.bin", big)
	if n := rm.gets.Load(); n != 1 {
		t.Fatalf("%d remote GETs for a compose and two reads", n)
	}
}
