package source_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentnas/nas/nastest"
	"github.com/agentnas/nas/source"
)

// diff returns "K key" lines between two refs.
func (g *testGW) diff(t testing.TB, repo, from, to string) []string {
	t.Helper()
	out := g.owner(t, "diff/list", map[string]any{"repo": repo, "from": from, "to": to})
	var lines []string
	for _, c := range out["changes"].([]any) {
		m := c.(map[string]any)
		lines = append(lines, m["kind"].(string)+" "+m["key"].(string))
	}
	sort.Strings(lines)
	return lines
}

func (g *testGW) refresh(t testing.TB, id string) map[string]any {
	t.Helper()
	return g.owner(t, "source/refresh", map[string]any{"id": id, "wait": true})["source"].(map[string]any)
}

func TestPinningDriftAndRefresh(t *testing.T) {
	t.Parallel()
	rm := startRemote(t)
	rm.mkBucket(t, "remote")
	rm.put(t, "remote", "p/one", []byte("one, version 1"))
	rm.put(t, "remote", "p/two", []byte("two, version 1"))
	rm.put(t, "remote", "p/three", []byte("three"))
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "data")
	info := gw.attach(t, "data", "ds/", "s3://remote/p", rm.URL, nil)
	if info["versioned"] != false {
		t.Fatalf("gofakes3 bucket taken as versioned: %v", info)
	}
	id := info["id"].(string)
	mustGet(t, gw.S3, "data", "ds/two", []byte("two, version 1")) // materialised

	rm.put(t, "remote", "p/one", []byte("one, version 2 (longer)"))
	rm.put(t, "remote", "p/two", []byte("two, version 2"))
	_, err := rm.cl.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("remote"), Key: aws.String("p/three")})
	must(t, err)
	rm.put(t, "remote", "p/four", []byte("four"))

	// Never read: the remote's new version is refused, not served.
	_, err = get(t, gw.S3, "data", "ds/one", "")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
	_, err = get(t, gw.S3, "data", "ds/three", "")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
	// A range of it too (remote ranged GETs check the ETag as well).
	_, err = get(t, gw.S3, "data", "ds/one", "bytes=2-5")
	wantCode(t, err, http.StatusConflict, "RemoteObjectChanged")
	// Read before: the pinned bytes are local and stay what was pinned.
	g0 := rm.gets.Load()
	mustGet(t, gw.S3, "data", "ds/two", []byte("two, version 1"))
	if rm.gets.Load() != g0 {
		t.Fatal("a materialised object went to the remote")
	}

	head := gw.owner(t, "branch/get", map[string]any{"repo": "data", "name": "main"})["branch"].(map[string]any)["head"].(string)
	info = gw.refresh(t, id)
	if info["added"] != 1.0 || info["changed"] != 2.0 || info["removed"] != 1.0 || info["base"] != head || info["commit"] == "" {
		t.Fatalf("refresh: %v", info)
	}
	got := gw.diff(t, "data", head, info["commit"].(string))
	want := []string{"A ds/four", "D ds/three", "M ds/one", "M ds/two"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("diff after refresh: %q, want %q", got, want)
	}
	mustGet(t, gw.S3, "data", "ds/one", []byte("one, version 2 (longer)"))
	mustGet(t, gw.S3, "data", "ds/two", []byte("two, version 2"))
	mustGet(t, gw.S3, "data", "ds/four", []byte("four"))
	_, err = get(t, gw.S3, "data", "ds/three", "")
	wantCode(t, err, http.StatusNotFound, "NoSuchKey")

	// Objects written on the branch over the prefix are the branch's:
	// refresh leaves them, and a refresh with nothing new commits nothing.
	putObject(t, gw.S3, "data", "ds/one", strings.NewReader("local edit"))
	putObject(t, gw.S3, "data", "ds/local", strings.NewReader("local only"))
	gw.owner(t, "commit/create", map[string]any{"repo": "data", "branch": "main", "message": "local"})
	rm.put(t, "remote", "p/one", []byte("one, version 3"))
	info = gw.refresh(t, id)
	if info["commit"] != "" || info["changed"] != 0.0 || info["kept"] != 1.0 {
		t.Fatalf("refresh over local edits: %v", info)
	}
	mustGet(t, gw.S3, "data", "ds/one", []byte("local edit"))
	mustGet(t, gw.S3, "data", "ds/local", []byte("local only"))
}

// TestNASRemote uses a second gateway as a real SigV4 remote. It reports
// versioning enabled, so entries pin version IDs: an overwritten object
// keeps serving its pinned version, and If-Match is enforced remotely.
func TestNASRemote(t *testing.T) {
	t.Parallel()
	up := nastest.Start(t)
	upS3 := s3Client(up.Endpoint, ownerCreds)
	_, err := upS3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("upstream")})
	must(t, err)
	putObject(t, upS3, "upstream", "d/a.txt", strings.NewReader("alpha v1"))
	putObject(t, upS3, "upstream", "d/b.txt", strings.NewReader("beta"))
	big := randomBytes(3, 9<<20)
	putObject(t, upS3, "upstream", "d/big.bin", strings.NewReader(string(big)))

	fp := startFaultProxy(t, up.Endpoint) // records the GETs' headers
	gw := startGateway(t, source.Options{})
	gw.mkRepo(t, "mirror")
	info := gw.owner(t, "source/add", map[string]any{"repo": "mirror", "prefix": "up/", "url": "s3://upstream/d",
		"endpoint": fp.URL, "access_key": nastest.AccessKey, "secret_key": nastest.SecretKey, "wait": true})["source"].(map[string]any)
	if info["versioned"] != true || info["added"] != 3.0 {
		t.Fatalf("attach: %v", info)
	}
	// Wrong credentials are refused at attach, with a clear error.
	st, out := ctl(t, gw.URL, ownerCreds, "source/add", map[string]any{"repo": "mirror", "prefix": "bad/", "url": "s3://upstream/d",
		"endpoint": up.Endpoint, "access_key": nastest.AccessKey, "secret_key": "wrong"})
	if st != http.StatusBadRequest || out["error"].(map[string]any)["code"] != "RemoteAccessDenied" {
		t.Fatalf("attach with a wrong secret: %d %v", st, out)
	}

	putObject(t, upS3, "upstream", "d/a.txt", strings.NewReader("alpha v2"))
	mustGet(t, gw.S3, "mirror", "up/a.txt", []byte("alpha v1")) // the pinned version
	got, err := get(t, gw.S3, "mirror", "up/big.bin", "bytes=9000000-9000099")
	must(t, err)
	if string(got) != string(big[9000000:9000100]) {
		t.Fatal("ranged read through a SigV4 remote differs")
	}
	mustGet(t, gw.S3, "mirror", "up/big.bin", big)

	info = gw.refresh(t, info["id"].(string))
	if info["changed"] != 1.0 {
		t.Fatalf("refresh: %v", info)
	}
	mustGet(t, gw.S3, "mirror", "up/a.txt", []byte("alpha v2"))

	// Every remote GET named the pin: If-Match with the pinned ETag, and
	// the pinned version.
	for _, h := range fp.seen() {
		if !strings.HasPrefix(h.ifMatch, `"`) || h.versionID == "" {
			t.Fatalf("remote GET without the pin: If-Match %q, versionId %q", h.ifMatch, h.versionID)
		}
	}
	if len(fp.seen()) < 4 {
		t.Fatalf("saw %d remote GETs", len(fp.seen()))
	}
}
