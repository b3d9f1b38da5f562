package e2e_test

// Regression tests of the one-door issue: each hole a hostile tester
// found, closed through package auth and tried again through the real
// server.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/nastest"
)

// doorWorld is a protected repository with a role, a run forked from main
// and keys the run cannot see, some written onto its own branch.
type doorWorld struct {
	srv      *nastest.Server
	own      *s3.Client
	oc       *ctl
	repo     string
	li       *leaseInfo
	lc       *ctl
	ls3      *s3.Client
	ownerOnB *s3.Client // the owner on the run's branch
}

func newDoorWorld(t *testing.T, role map[string]any, lease map[string]any) *doorWorld {
	t.Helper()
	srv := nastest.Start(t)
	w := &doorWorld{srv: srv, own: client(t, srv), oc: ownerCtl(t, srv), repo: "door"}
	w.oc.ok("repo/create", map[string]any{"repo": w.repo})
	w.oc.ok("branch/create", map[string]any{"repo": w.repo, "name": "seed", "from": "main"})
	for k, v := range map[string]string{"shared/a.txt": "a", "shared/big.bin": strings.Repeat("b", 2<<20), "finance/q4.txt": "secret"} {
		put(t, w.own, alias(w.repo, "seed"), k, []byte(v))
	}
	w.oc.commit(w.repo, "seed", "seed: the owner's private message")
	w.oc.ok("merge/create", map[string]any{"repo": w.repo, "from": "seed", "into": "main"})
	w.oc.ok("branch/create", map[string]any{"repo": w.repo, "name": "release", "from": "main"})
	r := map[string]any{"name": "run", "repo": w.repo, "fork_from": "main",
		"view": []map[string]any{{"path": "shared/**", "actions": []string{"list", "read", "write", "delete", "propose"}}}}
	for k, v := range role {
		r[k] = v
	}
	w.oc.ok("role/put", r)
	l := map[string]any{"repo": w.repo, "role": "run", "fork_from": "main", "ttl": "1h"}
	for k, v := range lease {
		l[k] = v
	}
	w.li = w.oc.newLease(l)
	w.lc = leaseCtl(t, srv, w.li)
	w.ls3 = leaseS3(t, srv, w.li)
	w.ownerOnB = newS3(t, srv, clientOpts{s3Opts: []func(*s3.Options){onBranch(w.li.Branch)}})
	return w
}

// TestDoorProposalsStayInView: a proposal, the gate card a run sees and
// its commit log name nothing outside its view, and it can propose only
// into the branch it was forked from; a hidden target and a missing one
// answer alike.
func TestDoorProposalsStayInView(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	put(t, w.ls3, w.repo, "shared/new.txt", []byte("the run's work"))
	w.lc.commit(w.repo, w.li.Branch, "the run's draft")
	// The owner writes a hidden key onto the run's branch.
	put(t, w.ownerOnB, w.repo, "finance/planted.txt", []byte("hidden"))
	w.oc.commit(w.repo, w.li.Branch, "the owner's note about finance")

	p := w.lc.ok("propose/create", map[string]any{"repo": w.repo, "intent": "notes"})["proposal"].(map[string]any)
	if p["into"] != "main" || p["status"] != "pending" {
		t.Fatalf("proposal: %v", p)
	}
	changes := p["changes"].([]any)
	if len(changes) != 1 || changes[0].(map[string]any)["key"] != "shared/new.txt" {
		t.Fatalf("the run's proposal lists %v, want only shared/new.txt", changes)
	}
	if c := p["counts"].(map[string]any); c["added"] != 1.0 || c["modified"] != 0.0 {
		t.Fatalf("counts include hidden changes: %v", c)
	}
	gates := w.lc.ok("gate/list", map[string]any{})["gates"].([]any)
	if len(gates) != 1 {
		t.Fatalf("gate list: %v", gates)
	}
	card := gates[0].(map[string]any)["card"].(map[string]any)["action"].(map[string]any)
	if card["files_changed"] != 1.0 || len(card["changes"].([]any)) != 1 {
		t.Fatalf("the gate card shows the run hidden changes: %v", card)
	}
	// The owner's card is the whole diff.
	og := w.oc.ok("gate/list", map[string]any{})["gates"].([]any)[0].(map[string]any)["card"].(map[string]any)["action"].(map[string]any)
	if og["files_changed"] != 2.0 {
		t.Fatalf("owner's card: %v", og)
	}

	// Into a hidden branch and into a missing one: the same answer.
	hidden := w.lc.fails("propose/create", map[string]any{"repo": w.repo, "into": "release"}, http.StatusNotFound, "NotFound")
	missing := w.lc.fails("propose/create", map[string]any{"repo": w.repo, "into": "nope"}, http.StatusNotFound, "NotFound")
	strip := func(e map[string]any, into string) string {
		return strings.ReplaceAll(e["message"].(string), into, "X")
	}
	if strip(hidden, "release") != strip(missing, "nope") {
		t.Fatalf("hidden and missing targets answer differently: %q / %q", hidden["message"], missing["message"])
	}
	w.lc.fails("propose/create", map[string]any{"repo": w.repo, "into": w.li.Branch}, http.StatusNotFound, "NotFound")

	// The log names the run's own commits in full, nobody else's.
	log := w.lc.ok("commit/log", map[string]any{"repo": w.repo, "ref": w.li.Branch})["commits"].([]any)
	sawOwn := false
	for _, x := range log {
		c := x.(map[string]any)
		msg, _ := c["message"].(string)
		if c["run"] == w.li.Run {
			sawOwn = true
			continue
		}
		if msg != "" || c["principal"] != nil || c["lease"] != nil {
			t.Errorf("commit/log under a lease shows another principal's commit: %v", c)
		}
	}
	if !sawOwn {
		t.Fatalf("the run's own commit is missing from its log: %v", log)
	}
	// The owner sees the messages.
	olog := w.oc.ok("commit/log", map[string]any{"repo": w.repo, "ref": w.li.Branch})["commits"].([]any)
	if !strings.Contains(fmt.Sprint(olog), "the owner's note about finance") {
		t.Fatalf("owner's log: %v", olog)
	}
}

// TestDoorReadsAndComposeBounds: ranges and segments are checked without
// overflow, compose is bounded and pays the write budget for the whole
// result, and no request can refund a budget.
func TestDoorReadsAndComposeBounds(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, map[string]any{"budgets": map[string]any{"bytes_read": 1 << 20, "bytes_written": 3 << 20}})
	remaining := func() map[string]any {
		return w.lc.ok("lease/get", map[string]any{})["remaining"].(map[string]any)
	}
	reads := func(ranges ...[2]int64) (int, map[string]any) {
		rs := []map[string]any{}
		for _, r := range ranges {
			rs = append(rs, map[string]any{"offset": r[0], "length": r[1]})
		}
		return w.lc.call("object/reads", map[string]any{"repo": w.repo, "key": "shared/big.bin", "ranges": rs})
	}
	for name, rs := range map[string][][2]int64{
		"negative offset":     {{-1, 10}},
		"negative length":     {{0, -10}},
		"past the end":        {{2<<20 - 5, 10}},
		"overflowing end":     {{math.MaxInt64 - 5, 10}},
		"overflowing length":  {{10, math.MaxInt64}},
		"offset past the end": {{2<<20 + 1, 0}},
	} {
		if st, out := reads(rs...); st != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("object/reads %s: %d %v, want 416", name, st, out)
		}
	}
	// A sum that would wrap: every range inside the object, too many bytes
	// for the budget: refused whole.
	before := remaining()
	if st, out := reads([2]int64{0, 1 << 20}, [2]int64{0, 1 << 20}); st != http.StatusForbidden || out["error"].(map[string]any)["code"] != "QuotaExceeded" {
		t.Fatalf("reads over the budget: %d %v", st, out)
	}
	if got := remaining(); got["bytes_read"] != before["bytes_read"] {
		t.Fatalf("a refused read was charged: %v -> %v", before, got)
	}
	many := make([][2]int64, 10001)
	for i := range many {
		many[i] = [2]int64{0, 1}
	}
	if st, _ := reads(many...); st != http.StatusBadRequest {
		t.Fatalf("10,001 ranges: %d, want 400", st)
	}

	compose := func(segs ...map[string]any) (int, map[string]any) {
		return w.lc.call("object/compose", map[string]any{"repo": w.repo, "key": "shared/composed", "segments": segs})
	}
	seg := func(off, n int64) map[string]any {
		return map[string]any{"key": "shared/big.bin", "offset": off, "length": n}
	}
	for name, s := range map[string]map[string]any{
		"negative offset": seg(-1, 10),
		"negative length": seg(0, -1),
		"overflowing end": seg(math.MaxInt64-5, 10),
		"past the end":    seg(1<<20, 2<<20),
	} {
		if st, out := compose(s); st != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("compose %s: %d %v, want 416", name, st, out)
		}
	}
	segs := make([]map[string]any, 10001)
	for i := range segs {
		segs[i] = seg(0, 1)
	}
	if st, _ := compose(segs...); st != http.StatusBadRequest {
		t.Fatalf("10,001 segments: %d, want 400", st)
	}
	// A hidden source does not exist.
	if st, _ := compose(map[string]any{"key": "finance/q4.txt", "offset": 0, "length": 3}); st != http.StatusNotFound {
		t.Fatalf("compose from a hidden key: %d", st)
	}
	// Composing 2 MiB of shared chunks costs 2 MiB of the write budget,
	// like CopyObject of the same bytes; a second one does not fit.
	before = remaining()
	if st, out := compose(seg(0, 2<<20)); st != http.StatusOK {
		t.Fatalf("compose: %d %v", st, out)
	}
	after := remaining()
	if before["bytes_written"].(float64)-after["bytes_written"].(float64) != 2<<20 {
		t.Fatalf("compose of 2 MiB charged %v -> %v", before["bytes_written"], after["bytes_written"])
	}
	if st, out := compose(seg(0, 2<<20)); st != http.StatusForbidden || out["error"].(map[string]any)["code"] != "QuotaExceeded" {
		t.Fatalf("compose beyond the write budget: %d %v", st, out)
	}
	// Nothing a request sends gives budget back.
	compose(seg(0, -(2 << 20)))
	reads([2]int64{0, -(1 << 20)})
	if got := remaining(); got["bytes_written"] != after["bytes_written"] || got["bytes_read"] != after["bytes_read"] {
		t.Fatalf("negative numbers refunded a budget: %v -> %v", after, got)
	}
}

// TestDoorUnsignedHeaders: an x-amz-* or x-nas-* header the signature does
// not cover is refused, so a presigned PUT cannot become a copy or carry
// metadata, and a header added to a signed request is not honoured.
func TestDoorUnsignedHeaders(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	ctx := context.Background()
	pp, err := s3.NewPresignClient(w.ls3).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.repo), Key: aws.String("shared/up.txt")})
	must(t, err)
	for name, h := range map[string]http.Header{
		"copy source": {"X-Amz-Copy-Source": {"/" + w.repo + "/finance/q4.txt"}},
		"metadata":    {"X-Amz-Meta-Evil": {"1"}},
		"branch":      {"X-Nas-Branch": {"main"}},
		"acl":         {"X-Amz-Acl": {"public-read"}},
	} {
		st, body := presignedPut(t, pp.URL, http.Header{}, []byte("x"))
		_ = st
		req, err := http.NewRequest(http.MethodPut, pp.URL, strings.NewReader("x"))
		must(t, err)
		for k, v := range h {
			req.Header[k] = v
		}
		status, _, rb := do(t, req)
		if status != http.StatusForbidden || !strings.Contains(string(rb), "headers present in the request which were not signed") {
			t.Errorf("presigned PUT with an unsigned %s header: %d %s (plain PUT: %d %s)", name, status, rb, st, body)
		}
	}
	// The presigned PUT's own object holds what was sent, without the
	// refused metadata, and finance/q4.txt was never copied.
	_, out := get(t, w.ls3, w.repo, "shared/up.txt")
	for k := range out.Metadata {
		if !strings.HasPrefix(k, "nas-") { // the gateway's own trust labels of the lease's write
			t.Fatalf("metadata arrived through an unsigned header: %v", out.Metadata)
		}
	}
	// A header added after signing, with the owner's header signature.
	inj := newS3(t, w.srv, clientOpts{httpClient: &http.Client{Transport: headerInjector{base: http.DefaultTransport,
		h: http.Header{"X-Amz-Meta-Added": {"late"}}}}})
	_, err = inj.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(alias(w.repo, "release")), Key: aws.String("x"), Body: strings.NewReader("x")})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
}

// TestDoorSignedPayload: the control API and STS refuse payloads the
// signature does not cover, and presigned (query) authentication.
func TestDoorSignedPayload(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	body := []byte(`{"repo":"door","name":"evil","from":"main"}`)
	for _, creds := range []aws.Credentials{owner, w.li.Creds} {
		st, _, rb := rawDo(t, http.MethodPost, w.srv.Endpoint+"/_nas/v1/branch/create", body, creds,
			http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}, "Content-Type": {"application/json"}})
		if st != http.StatusForbidden || !strings.Contains(string(rb), "unsigned_payload") {
			t.Errorf("control API with UNSIGNED-PAYLOAD: %d %s", st, rb)
		}
	}
	if st, _ := w.oc.call("branch/get", map[string]any{"repo": "door", "name": "evil"}); st != http.StatusNotFound {
		t.Fatalf("an unsigned control request acted: %d", st)
	}
	// A presigned URL of the control API.
	req, err := http.NewRequest(http.MethodPost, w.srv.Endpoint+"/_nas/v1/repo/list", nil)
	must(t, err)
	u, _, err := presignRequest(req, owner)
	must(t, err)
	st, rb := httpPost(t, u, []byte("{}"))
	if st != http.StatusForbidden || !strings.Contains(rb, "unsigned_payload") {
		t.Fatalf("presigned control API call: %d %s", st, rb)
	}
	// STS with an unsigned payload.
	form := []byte("Action=AssumeRole&Version=2011-06-15&RoleArn=arn:aws:iam::000000000000:role/run&RoleSessionName=sneaky")
	st, _, sb := rawDo(t, http.MethodPost, w.srv.Endpoint+"/", form, owner,
		http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}, "Content-Type": {"application/x-www-form-urlencoded"}})
	if st != http.StatusForbidden || xmlCode(sb) != "IncompleteSignature" {
		t.Fatalf("STS with UNSIGNED-PAYLOAD: %d %s", st, sb)
	}
}

// TestDoorSlowBodies: a body that stalls or trickles is cut off, and a
// request refused before its body is read is answered and its connection
// closed, without waiting for the body.
func TestDoorSlowBodies(t *testing.T) {
	nastest.SkipInCluster(t, "the test proxy, not the gateway, would read the slow body")
	t.Parallel()
	srv := nastest.Start(t, nastest.Options{Bodies: gateway.BodyLimits{Stall: 300 * time.Millisecond, Window: 600 * time.Millisecond, MinBytes: 4096}})
	createBucket(t, client(t, srv), "slow")
	// sendHeadAs writes a signed request's head (body declared in full, or
	// chunked when size is negative) and returns the connection with what
	// the server answered.
	sendHeadAs := func(t *testing.T, method, path string, creds aws.Credentials, size int, hdr http.Header) (net.Conn, *bufio.Reader) {
		if hdr == nil {
			hdr = http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}
		}
		req := rawRequest(t, method, srv.Endpoint+path, nil, time.Now(), creds, hdr)
		req.ContentLength = int64(size)
		conn, err := net.Dial("tcp", srv.Addr)
		must(t, err)
		t.Cleanup(func() { conn.Close() })
		var head strings.Builder
		fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, srv.Addr)
		if size < 0 {
			head.WriteString("Transfer-Encoding: chunked\r\n")
		} else {
			fmt.Fprintf(&head, "Content-Length: %d\r\n", size)
		}
		for k, vs := range req.Header {
			for _, v := range vs {
				fmt.Fprintf(&head, "%s: %s\r\n", k, v)
			}
		}
		head.WriteString("\r\n")
		_, err = conn.Write([]byte(head.String()))
		must(t, err)
		return conn, bufio.NewReader(conn)
	}
	// sendHead and sendHeadTo send a PUT's head to /slow/obj or to path.
	sendHead := func(t *testing.T, creds aws.Credentials, size int) (net.Conn, *bufio.Reader) {
		return sendHeadAs(t, http.MethodPut, "/slow/obj", creds, size, nil)
	}
	sendHeadTo := func(t *testing.T, path string, creds aws.Credentials, size int) (net.Conn, *bufio.Reader) {
		return sendHeadAs(t, http.MethodPut, path, creds, size, nil)
	}
	answer := func(t *testing.T, conn net.Conn, br *bufio.Reader, within time.Duration) (*http.Response, string) {
		conn.SetReadDeadline(time.Now().Add(within))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer within %s: %v", within, err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	t.Run("stall", func(t *testing.T) {
		conn, br := sendHead(t, owner, 1<<20)
		conn.Write([]byte("only a little"))
		resp, b := answer(t, conn, br, 5*time.Second)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "RequestTimeout") {
			t.Fatalf("stalled body: %d %s", resp.StatusCode, b)
		}
	})
	t.Run("trickle", func(t *testing.T) {
		conn, br := sendHead(t, owner, 1<<20)
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := conn.Write([]byte("0123456789")); err != nil {
						return
					}
				}
			}
		}()
		defer close(stop)
		resp, b := answer(t, conn, br, 10*time.Second)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(b, "RequestTimeout") {
			t.Fatalf("trickled body: %d %s", resp.StatusCode, b)
		}
	})
	t.Run("an error waits for a small body", func(t *testing.T) {
		// An error other than a refusal is answered once a small body is
		// in (net/http drains it before the status line, which the body
		// guard keeps by handing the server's own body back): a client
		// still writing its body when the answer arrives can lose it. The
		// server waits for it as for any body, up to the stall limit
		// (300 ms here) from the handler's end; the body comes well before.
		conn, br := sendHeadTo(t, "/slow?policy", owner, 2000)
		conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := br.Peek(1); !isTimeoutErr(err) {
			t.Fatalf("answered before the body was sent: %v", err)
		}
		_, err := conn.Write([]byte(strings.Repeat("{", 2000)))
		must(t, err)
		resp, b := answer(t, conn, br, 5*time.Second)
		if resp.StatusCode != http.StatusNotImplemented || resp.Close {
			t.Fatalf("PutBucketPolicy: %d close=%v %s", resp.StatusCode, resp.Close, b)
		}
	})
	t.Run("refused before the body", func(t *testing.T) {
		bad := owner
		bad.SecretAccessKey = "wrong"
		conn, br := sendHead(t, bad, 10<<20)
		conn.Write(make([]byte, 1024))
		resp, _ := answer(t, conn, br, 5*time.Second)
		if resp.StatusCode != http.StatusForbidden || !resp.Close {
			t.Fatalf("bad signature: %d %v", resp.StatusCode, resp.Header)
		}
		// The server closed the connection instead of reading the 10 MiB.
		conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		if _, err := br.ReadByte(); err == nil || isTimeoutErr(err) {
			t.Fatalf("the connection stayed open after refusing the request: %v", err)
		}
	})
	t.Run("refused while the client waits for 100 Continue", func(t *testing.T) {
		// A client that sent Expect: 100-continue sends no body until it is
		// told to: each refusal must come at once, without a 100 first
		// and without waiting for bytes that will not come (a handler
		// closing the body made the server drain it first: both sides
		// waited for the client's continue timeout).
		bad := owner
		bad.SecretAccessKey = "wrong"
		expect := func(h http.Header) http.Header {
			h.Set("Expect", "100-continue")
			return h
		}
		unsigned := func() http.Header { return http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}} }
		streaming := http.Header{"X-Amz-Content-Sha256": {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
			"Content-Encoding": {"aws-chunked"}, "X-Amz-Decoded-Content-Length": {"1048576"}}
		for _, c := range []struct {
			name, method, path string
			creds              aws.Credentials
			hdr                http.Header
			status             int
		}{
			{"bad signature", http.MethodPut, "/slow/obj", bad, expect(unsigned()), http.StatusForbidden},
			{"no such bucket", http.MethodPut, "/no-such-bucket/obj", owner, expect(unsigned()), http.StatusNotFound},
			{"import over a taken name", http.MethodPost, "/_nas/v1/repo/import?repo=slow", owner, expect(streaming), http.StatusConflict},
		} {
			// Chunked, as a stream of unknown length is sent: the server
			// drains no declared length over 256 KiB, which would hide
			// the wait.
			t.Run(c.name, func(t *testing.T) {
				conn, br := sendHeadAs(t, c.method, c.path, c.creds, -1, c.hdr)
				resp, b := answer(t, conn, br, 5*time.Second)
				if resp.StatusCode != c.status {
					t.Errorf("%d %s", resp.StatusCode, b)
				}
			})
		}
	})
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestDoorRequiresGateAndRoles: requires_gate sends merges (or deletes)
// to a person whatever the policy says, and the owner's lease/create is
// held to its role as AssumeRole is.
func TestDoorRequiresGateAndRoles(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, map[string]any{"max_ttl": "2h", "budgets": map[string]any{"bytes_read": 1000}}, map[string]any{"requires_gate": []string{"merge"}})
	w.oc.ok("policy/set", map[string]any{"repo": w.repo, "policy": map[string]any{"rules": []map[string]any{
		{"name": "anything", "then": "merge"}}}})
	put(t, w.ls3, w.repo, "shared/x.txt", []byte("x"))
	p := w.lc.ok("propose/create", map[string]any{"repo": w.repo})["proposal"].(map[string]any)
	if p["status"] != "pending" || !strings.Contains(p["rule"].(string), "requires_gate") {
		t.Fatalf("a lease that requires a gate for merge was merged by policy: %v", p)
	}
	// delete: only proposals that delete wait.
	dl := w.oc.newLease(map[string]any{"repo": w.repo, "role": "run", "fork_from": "main", "ttl": "1h", "requires_gate": []string{"delete"}})
	dc, ds := leaseCtl(t, w.srv, dl), leaseS3(t, w.srv, dl)
	put(t, ds, w.repo, "shared/y.txt", []byte("y"))
	if p := dc.ok("propose/create", map[string]any{"repo": w.repo})["proposal"].(map[string]any); p["status"] != "merged" {
		t.Fatalf("a proposal without deletes: %v", p)
	}
	_, err := ds.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(w.repo), Key: aws.String("shared/a.txt")})
	must(t, err)
	if p := dc.ok("propose/create", map[string]any{"repo": w.repo})["proposal"].(map[string]any); p["status"] != "pending" {
		t.Fatalf("a proposal that deletes, by a lease requiring a gate for deletes: %v", p)
	}
	w.oc.fails("lease/create", map[string]any{"repo": w.repo, "role": "run", "fork_from": "main", "requires_gate": []string{"launch"}},
		http.StatusBadRequest, "InvalidArgument")

	// The role's envelope: paths, actions, lifetime, budgets.
	base := map[string]any{"repo": w.repo, "role": "run", "fork_from": "main"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	w.oc.refused("lease/create", with("view", []map[string]any{{"path": "finance/**", "actions": []string{"read"}}}), "outside role")
	w.oc.refused("lease/create", with("ttl", "3h"), "exceeds role")
	w.oc.refused("lease/create", with("budgets", map[string]any{"bytes_read": 2000}), "exceeds role")
	w.oc.fails("lease/create", with("budgets", map[string]any{"bytes_read": -5}), http.StatusBadRequest, "InvalidArgument")
	w.oc.fails("lease/create", with("role", "nobody"), http.StatusNotFound, "NotFound")
	l := w.oc.newLease(base)
	if b := l.Raw["budgets"].(map[string]any); b["bytes_read"] != 1000.0 {
		t.Fatalf("a lease of the role without budgets gets the role's: %v", b)
	}
	if exp := time.Until(l.ExpiresAt); exp > 2*time.Hour {
		t.Fatalf("a lease outlives its role's max_ttl: %s", exp)
	}
}

// TestDoorShareGrants: a HEAD does not use up a single-use grant (aws s3
// cp heads then gets), every use is recorded, and the owner lists and
// revokes grants.
func TestDoorShareGrants(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	ctx := context.Background()
	g := w.oc.ok("share/grant", map[string]any{"lease_id": w.li.ID, "path": "finance/q4.txt", "actions": []string{"read"}, "ttl": "10m", "single_use": true})["grant"].(map[string]any)
	for i := 0; i < 2; i++ {
		_, err := w.ls3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(w.repo), Key: aws.String("finance/q4.txt")})
		must(t, err)
	}
	got, _ := get(t, w.ls3, w.repo, "finance/q4.txt")
	wantBytes(t, got, []byte("secret"))
	_, _, err := tryGet(w.ls3, w.repo, "finance/q4.txt")
	wantErr(t, err, http.StatusNotFound, "NoSuchKey")

	// A grant used through the control API's stat is recorded too.
	g2 := w.oc.ok("share/grant", map[string]any{"lease_id": w.li.ID, "path": "finance/other.txt", "actions": []string{"read"}, "ttl": "10m"})["grant"].(map[string]any)
	put(t, w.ownerOnB, w.repo, "finance/other.txt", []byte("other"))
	w.lc.ok("object/stat", map[string]any{"repo": w.repo, "key": "finance/other.txt", "inline_max": 1024})
	used := map[string]bool{}
	for _, x := range w.oc.ok("record/list", map[string]any{"lease": w.li.ID, "kinds": []string{"share.used"}})["records"].([]any) {
		used[x.(map[string]any)["details"].(map[string]any)["grant"].(string)] = true
	}
	if !used[g["id"].(string)] || !used[g2["id"].(string)] {
		t.Fatalf("grant uses recorded: %v (want %s and %s)", used, g["id"], g2["id"])
	}

	list := w.oc.ok("share/list", map[string]any{"lease_id": w.li.ID})["grants"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["live"] != false || list[1].(map[string]any)["live"] != true {
		t.Fatalf("share/list: %v", list)
	}
	w.oc.ok("share/revoke", map[string]any{"lease_id": w.li.ID, "grant_id": g2["id"]})
	_, _, err = tryGet(w.ls3, w.repo, "finance/other.txt")
	wantErr(t, err, http.StatusNotFound, "NoSuchKey")
	w.lc.fails("share/list", map[string]any{"lease_id": w.li.ID}, http.StatusForbidden, "AccessDenied")
}

// TestDoorDenialRecords: one request refused a thousand times writes one
// summary, and a lease's refusals are rate limited.
func TestDoorDenialRecords(t *testing.T) {
	nastest.SkipInCluster(t, "each gateway rate-limits the denials it records")
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, fmt.Sprintf("finance/k%04d", i))
	}
	objs := make([]s3types.ObjectIdentifier, len(ids))
	for i, k := range ids {
		objs[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := w.ls3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(w.repo), Delete: &s3types.Delete{Objects: objs}})
	must(t, err)
	if len(out.Errors) != 0 {
		t.Fatalf("deleting hidden keys: %v", out.Errors)
	}
	denials := func() []any {
		return w.oc.ok("record/list", map[string]any{"lease": w.li.ID, "kinds": []string{"denied"}, "limit": 5000})["records"].([]any)
	}
	d := denials()
	if len(d) != 2 {
		t.Fatalf("1,000 hidden deletes wrote %d denial records, want the first and one summary", len(d))
	}
	if c := d[1].(map[string]any)["details"].(map[string]any)["count"]; c != "999" {
		t.Fatalf("summary: %v", d[1])
	}
	// A flood of refused requests: at most 20 records a second.
	start := time.Now()
	for i := 0; i < 100; i++ {
		tryGet(w.ls3, w.repo, fmt.Sprintf("finance/x%d", i))
	}
	secs := int(time.Since(start).Seconds()) + 1
	if n := len(denials()) - 2; n > 20*(secs+1) || n == 0 {
		t.Fatalf("100 refused GETs in %d s wrote %d records, want at most 20 a second", secs, n)
	}
}

// httpPost posts body to u.
func httpPost(t testing.TB, u string, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(string(body)))
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// presignRequest presigns req with creds for 5 minutes.
func presignRequest(req *http.Request, creds aws.Credentials) (string, http.Header, error) {
	q := req.URL.Query()
	q.Set("X-Amz-Expires", "300")
	req.URL.RawQuery = q.Encode()
	return v4.NewSigner().PresignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
}

// TestDoorProvenance: a commit the owner (or an orchestrator) makes on a
// run's branch still explains back to every lease whose staged writes it
// holds, with what each run read.
func TestDoorProvenance(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	get(t, w.ls3, w.repo, "shared/a.txt")
	put(t, w.ls3, w.repo, "shared/by-run.txt", []byte("run"))
	// A second lease on the same branch (an orchestrator's helper).
	other := w.oc.newLease(map[string]any{"repo": w.repo, "role": "run", "branch": w.li.Branch, "ttl": "1h"})
	put(t, leaseS3(t, w.srv, other), w.repo, "shared/by-helper.txt", []byte("helper"))
	put(t, w.ownerOnB, w.repo, "shared/by-owner.txt", []byte("owner"))

	id := w.oc.commit(w.repo, w.li.Branch, "the orchestrator commits the run's work")
	x := w.oc.ok("record/explain", map[string]any{"repo": w.repo, "commit": id})["explanation"].(map[string]any)
	contrib, _ := x["contributors"].([]any)
	found := map[string]map[string]any{}
	for _, c := range contrib {
		m := c.(map[string]any)
		found[m["lease"].(string)] = m
	}
	if len(found) != 2 || found[w.li.ID] == nil || found[other.ID] == nil {
		t.Fatalf("explain names %v, want leases %s and %s", contrib, w.li.ID, other.ID)
	}
	rm, _ := found[w.li.ID]["read_manifest"].(map[string]any)
	if rm == nil || !strings.Contains(fmt.Sprint(rm["reads"]), "shared/a.txt") {
		t.Fatalf("the run's read manifest is not in the explanation: %v", found[w.li.ID])
	}
	if found[w.li.ID]["run"] != w.li.Run || len(found[w.li.ID]["lease_events"].([]any)) == 0 {
		t.Fatalf("contributor: %v", found[w.li.ID])
	}
	// The commit itself names them (exported with it).
	log := w.oc.ok("commit/log", map[string]any{"repo": w.repo, "ref": w.li.Branch, "limit": 1})["commits"].([]any)
	if log[0].(map[string]any)["id"] != id {
		t.Fatalf("log: %v", log)
	}
	// The next commit, of writes made after, names only who wrote then.
	put(t, leaseS3(t, w.srv, other), w.repo, "shared/later.txt", []byte("later"))
	id2 := w.oc.commit(w.repo, w.li.Branch, "later")
	x2 := w.oc.ok("record/explain", map[string]any{"repo": w.repo, "commit": id2})["explanation"].(map[string]any)
	c2, _ := x2["contributors"].([]any)
	if len(c2) != 1 || c2[0].(map[string]any)["lease"] != other.ID {
		t.Fatalf("second commit names %v, want only %s", c2, other.ID)
	}
}

// TestDoorRecordsRawKeys: a lease's read and delete of a key that is not
// UTF-8 (S3 refuses to create one now; an earlier version or an import may
// have stored it) are in its read manifest and the flight recorder.
func TestDoorRecordsRawKeys(t *testing.T) {
	t.Parallel()
	w := newDoorWorld(t, nil, nil)
	key := "shared/raw-\xff\xfe.bin"
	_, err := w.ownerOnB.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(w.repo), Key: aws.String(key), Body: strings.NewReader("raw")})
	wantErr(t, err, http.StatusBadRequest, "InvalidArgument")
	put(t, w.ownerOnB, w.repo, "shared/raw.bin", []byte("raw"))
	ctx := context.Background()
	e, err := w.srv.Gateway.Branches.Get(ctx, w.repo, w.li.Branch, "shared/raw.bin")
	must(t, err)
	_, err = w.srv.Gateway.Branches.Put(ctx, w.repo, w.li.Branch, key, e, branch.Condition{})
	must(t, err)
	get(t, w.ls3, w.repo, key)
	_, err = w.ls3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(w.repo), Key: aws.String(key)})
	must(t, err)
	id := w.lc.commit(w.repo, w.li.Branch, "raw")
	x := w.oc.ok("record/explain", map[string]any{"repo": w.repo, "commit": id})["explanation"].(map[string]any)
	if !strings.Contains(fmt.Sprint(x["read_manifest"]), "shared/raw-\uFFFD.bin") {
		t.Fatalf("the read of a raw key is missing from the manifest: %v", x["read_manifest"])
	}
	recs := w.oc.ok("record/list", map[string]any{"lease": w.li.ID, "kinds": []string{"delete"}})["records"].([]any)
	if len(recs) != 1 {
		t.Fatalf("delete records: %v", recs)
	}
}
