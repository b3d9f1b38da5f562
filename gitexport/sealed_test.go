package gitexport

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/keyring"
	"github.com/agentnas/nas/manifest"
)

// TestRoundTripSealed: a sensitive (sealed) file exports as its sealed
// bytes (the Git blob holds no plaintext) and imports back to the same
// commit IDs; with the keyring the imported copy opens to the plaintext.
func TestRoundTripSealed(t *testing.T) {
	ctx := context.Background()
	keys, err := keyring.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, dst := newService(t), newService(t)
	src.SetKeys(keys)
	dst.SetKeys(keys)
	if _, err := src.CreateRepo(ctx, "sealed", branch.CreateRepoOptions{Principal: "owner"}); err != nil {
		t.Fatal(err)
	}
	plain := bytes.Repeat([]byte("a customer's contract, clause by clause. "), 4000)
	u := src.Chunks().NewUpload()
	defer u.Close()
	refs, n, sl, err := src.Ingest(ctx, u, bytes.NewReader(plain), nil, "acme")
	if err != nil || u.Sync(ctx) != nil {
		t.Fatal(err)
	}
	e := &manifest.Entry{Size: n, ETag: "0123456789abcdef0123456789abcdef", Retention: manifest.RetentionSensitive}
	h, list := e.SetContent(&manifest.Content{Chunks: refs, Seal: sl})
	if _, err := src.Put(ctx, "sealed", "main", "crm/acme.txt", e, branch.Condition{}, u, branch.ContentRecord{Hash: h, Data: list}); err != nil {
		t.Fatal(err)
	}
	id := commit(t, src, "sealed", "main", "sealed")
	dir := filepath.Join(t.TempDir(), "export.git")
	roundTrip(t, src, "sealed", dir, dst, "back")
	all := runGit(t, dir, "cat-file", "--batch-all-objects", "--batch")
	if len(all) < len(plain) { // the sealed blob is there, plaintext-sized
		t.Fatalf("git cat-file shows %d bytes of objects: the check would prove nothing", len(all))
	}
	if bytes.Contains([]byte(all), plain[:40]) {
		t.Error("a Git object of the export holds the plaintext")
	}
	got, err := dst.GetAt(ctx, "back", id, "crm/acme.txt")
	if err != nil {
		t.Fatalf("the sealed file at the same commit ID after the import: %v", err)
	}
	c, err := dst.Manifest().Content(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := dst.ReadContent(ctx, &b, c, 0, got.Size); err != nil || !bytes.Equal(b.Bytes(), plain) {
		t.Fatalf("the imported sealed file does not open: %v", err)
	}
}
