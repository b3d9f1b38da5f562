package layers_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agentnas/nas/"

// rank orders the packages: an import must point to a lower rank. A
// package missing from the table fails the test, so a new one is placed
// on purpose.
var rank = map[string]int{
	// Leaves: vocabularies every side shares.
	"adapter": 0, // the source adapter protocol (stdio JSON lines)
	"program": 0, // running an owner-installed program: the folder check, the scrubbed env, the process group
	"chunk":   0, "glob": 0, "kv": 0, "checksum": 0, "sigv4": 0, "bytesize": 0, "keyspace": 0, "postform": 0, "acl": 0, "cors": 0,
	"lease": 1, // the lease model (glob)
	// The PostgreSQL engine of kv, for gateways sharing one database.
	"kv/pgkv": 1,
	// Locks held in a kv store, across gateways sharing one.
	"kv/kvlock": 1,
	// Segments in an S3 bucket (aws-sdk-go-v2), the chunk store's Remote.
	"cas/s3seg": 1,
	"label":     1, // trust labels, taint, retention classes and the owner's label rules (glob, keyring)
	// The credential scanner that labels written objects secret (no
	// outbound calls, nothing of ours).
	"secret": 0,
	"seal":   0, "keyring": 0, // sealed content: its frames, and the domain keys
	// Budgeted reads: outlines and evidence pointers, no storage.
	"outline": 0, "evidence": 0,
	// Agent memory: the note format and a Home's layout (evidence, and
	// lease for role names), no storage.
	"memory": 2,
	"sigv2":  1, // Signature Version 2, in sigv4's vocabulary
	// Operations: the request record the edges fill in (access), and the
	// Prometheus registry with its kv decorator (metrics, over kv).
	"access": 0, "metrics": 1,
	"apiv1": 2, // the control API's contract (lease)
	// Storage.
	"cas": 2, "tree": 2, "record": 2,
	"manifest": 3,
	"branch":   4,
	"source":   5, "auth": 5, "gitexport": 6,
	"search": 5, // the full-text index of committed files (branch); the door stays in api
	"gate":   6,
	"check":  4, // pre-merge checks: their store, rules, results and the runner (hook for signing, program, kv, record)
	"hook":   3, // webhooks: deliveries of the recorder's events (kv, record)
	// The merge policy and the session invariant: pure evaluation over
	// labels and globs, no storage, no network (L3.5).
	"policy": 2,
	// The edges, and their assembly.
	"s3api": 7, "api": 7, "sts": 7,
	"ui":      7, // the control room: the page's assets and the sign-in (auth, apiv1)
	"gateway": 8,
	// The client side.
	"client": 3, "chunkcache": 2,
	"fuse": 4, "mcpserver": 4,
	// Tools, tests and the binary.
	"cas/castest": 9, "kv/kvtest": 9, "tree/treetest": 9, "source/sourcetest": 9, "adapter/adaptertest": 9,
	"nastest": 9, "conformance": 9, "bench": 10, "e2e": 11, "cmd/nas": 11, "cmd/nas-bench": 11, "cmd/nas-adapter-http": 11, "cmd/nas-adapter-postgres": 11, "internal/pgtest": 8, "layers": 11, "docs": 11,
}

// storage is what the client side must never link, directly or not: a
// mount or client runs on another host and reaches data only through the
// gateway.
var storage = []string{"kv", "cas", "tree", "manifest", "branch", "record", "auth", "source", "gate",
	"s3api", "api", "sts", "gateway", "github.com/dgraph-io/badger"}

var clientSide = []string{"apiv1", "client", "chunkcache", "fuse", "mcpserver"}

func goList(t *testing.T, format string, pkgs ...string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", format}, pkgs...)...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	res := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 {
			res[strings.TrimPrefix(f[0], module)] = f[1:]
		}
	}
	return res
}

func TestImportsPointDown(t *testing.T) {
	for pkg, imports := range goList(t, "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		r, ok := rank[pkg]
		if !ok {
			t.Errorf("package %s has no rank in layers_test.go: place it in the layers", pkg)
			continue
		}
		for _, imp := range imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if dr, ok := rank[dep]; ok && dr >= r {
				t.Errorf("%s (rank %d) imports %s (rank %d): imports must point to lower layers", pkg, r, dep, dr)
			}
		}
	}
}

func TestClientSideLinksNoStorage(t *testing.T) {
	pkgs := make([]string, len(clientSide))
	for i, p := range clientSide {
		pkgs[i] = "./" + p
	}
	deps := goList(t, "{{.ImportPath}} {{join .Deps \" \"}}", pkgs...)
	for _, p := range clientSide {
		for _, d := range deps[p] {
			d = strings.TrimPrefix(d, module)
			for _, s := range storage {
				if d == s || strings.HasPrefix(d, s+"/") {
					t.Errorf("%s links %s: the client side reaches storage only through the gateway", p, d)
				}
			}
		}
	}
}

// testOnly is what the product binary must not link: test doubles, the
// benchmark harness and its plotting.
var testOnly = []string{"github.com/johannesboyne/gofakes3", "gonum.org/v1/plot", module + "bench",
	module + "nastest", module + "cas/castest", module + "kv/kvtest", module + "tree/treetest", module + "source/sourcetest", module + "internal/pgtest", "testing"}

func TestProductBinaryLinksNoTestBench(t *testing.T) {
	deps := goList(t, "{{.ImportPath}} {{join .Deps \" \"}}", "./cmd/nas")["cmd/nas"]
	if len(deps) == 0 {
		t.Fatal("go list found no dependencies of cmd/nas")
	}
	for _, d := range deps {
		for _, bad := range testOnly {
			if d == bad || strings.HasPrefix(d, bad+"/") {
				t.Errorf("cmd/nas links %s: test doubles and the benchmark harness belong in cmd/nas-bench and tests", d)
			}
		}
	}
}

// doorOnly are packages only the one door (auth) may import: a second
// importer would be a second place where requests are authenticated.
var doorOnly = map[string]string{"sigv2": "auth"}

func TestSignaturesOnlyAtTheDoor(t *testing.T) {
	for pkg, imports := range goList(t, "{{.ImportPath}} {{join .Imports \" \"}}", "./...") {
		for _, imp := range imports {
			dep, ours := strings.CutPrefix(imp, module)
			if door, ok := doorOnly[dep]; ours && ok && pkg != door {
				t.Errorf("%s imports %s: only %s authenticates requests", pkg, dep, door)
			}
		}
	}
}
