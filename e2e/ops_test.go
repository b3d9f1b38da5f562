package e2e_test

// The operations endpoints through the real server: health without
// authentication, metrics scraped and parsed after a workload, and the
// access log, one line per request and no secrets.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentnas/nas/nastest"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// plainGet sends an unsigned GET and returns status and body.
func plainGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHealthAnswersWithoutAuthenticationAndNothingElse(t *testing.T) {
	srv := nastest.Start(t)
	for _, path := range []string{"/_nas/health/live", "/_nas/health/ready"} {
		st, body := plainGet(t, srv.Endpoint+path)
		if st != http.StatusOK || body != "ok\n" {
			t.Errorf("GET %s: %d %q, want 200 \"ok\\n\"", path, st, body)
		}
	}
}

// workload is what TestMetricsAfterAWorkload does, named so the test can
// check that none of these names reaches a label.
type workload struct {
	repo, key, role string
	lease           *leaseInfo
	presigned       string
}

func runWorkload(t *testing.T, srv *nastest.Server) workload {
	ctx := context.Background()
	w := workload{repo: "opsrepo-zebra", key: "dir/opskey-walrus.txt", role: "opsrole-heron"}
	c := client(t, srv)
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(w.repo)})
	must(t, err)
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.repo), Key: aws.String(w.key), Body: strings.NewReader("hello metrics")})
	must(t, err)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(w.repo), Key: aws.String(w.key)})
	must(t, err)
	io.Copy(io.Discard, out.Body)
	out.Body.Close()
	_, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(w.repo)})
	must(t, err)
	oc := ownerCtl(t, srv)
	oc.commit(w.repo, "main", "ops workload")
	oc.ok("branch/create", map[string]any{"repo": w.repo, "name": "side", "from": "main"})
	oc.ok("propose/create", map[string]any{"repo": w.repo, "branch": "side", "into": "main", "intent": "nothing new"})
	oc.ok("role/put", map[string]any{"name": w.role, "repo": w.repo,
		"view": []map[string]any{{"path": "**", "actions": []string{"list", "read"}}}})
	w.lease = oc.newLease(map[string]any{"repo": w.repo, "role": w.role, "fork_from": "main", "ttl": "1h"})
	lc := leaseS3(t, srv, w.lease)
	_, err = lc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(w.repo), Key: aws.String(w.key), Body: strings.NewReader("no")})
	wantErr(t, err, http.StatusForbidden, "AccessDenied")
	ps, err := s3.NewPresignClient(leaseS3(t, srv, w.lease)).PresignGetObject(ctx,
		&s3.GetObjectInput{Bucket: aws.String(w.repo), Key: aws.String(w.key)}, s3.WithPresignExpires(5*time.Minute))
	must(t, err)
	w.presigned = ps.URL
	if st, body := plainGet(t, ps.URL); st != http.StatusOK || body != "hello metrics" {
		t.Fatalf("presigned GET: %d %q", st, body)
	}
	return w
}

// scrape GETs the metrics with the owner's signature and parses them.
func scrape(t *testing.T, srv *nastest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.Endpoint+"/_nas/metrics", nil)
	must(t, err)
	const empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	req.Header.Set("x-amz-content-sha256", empty)
	must(t, v4.NewSigner().SignHTTP(context.Background(), owner, req, empty, "s3", regionA, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("owner's scrape: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	must(t, err)
	return fams
}

// value sums the samples of family name whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

func TestMetricsAfterAWorkload(t *testing.T) {
	nastest.SkipInCluster(t, "each gateway counts its own requests")
	srv := nastest.Start(t)
	if st, _ := plainGet(t, srv.Endpoint+"/_nas/metrics"); st != http.StatusForbidden {
		t.Fatalf("unsigned scrape of the main listener: %d, want 403", st)
	}
	w := runWorkload(t, srv)
	fams := scrape(t, srv)
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"nas_requests_total", map[string]string{"api": "s3", "operation": "PutObject", "status": "200"}},
		{"nas_requests_total", map[string]string{"api": "s3", "operation": "GetObject", "status": "200"}},
		{"nas_requests_total", map[string]string{"api": "s3", "operation": "ListObjectsV2", "status": "200"}},
		{"nas_requests_total", map[string]string{"api": "s3", "operation": "PutObject", "status": "403"}},
		{"nas_requests_total", map[string]string{"api": "control", "operation": "commit/create", "status": "200"}},
		{"nas_request_duration_seconds", map[string]string{"api": "s3", "operation": "GetObject"}},
		{"nas_received_bytes_total", map[string]string{"api": "s3"}},
		{"nas_sent_bytes_total", map[string]string{"api": "s3"}},
		{"nas_lease_denials_total", map[string]string{"reason": "denied"}},
		{"nas_lease_budget_charged_total", map[string]string{"budget": "requests"}},
		{"nas_kv_operation_duration_seconds", map[string]string{"op": "update"}},
		{"nas_chunk_operation_duration_seconds", map[string]string{"op": "write"}},
		{"nas_chunk_bytes_total", map[string]string{"op": "read"}},
		{"nas_cache_lookups_total", map[string]string{"cache": "tree_nodes", "result": "hit"}},
		{"nas_gate_outcomes_total", map[string]string{"event": "proposal"}},
	} {
		if v := value(fams, c.name, c.labels); v <= 0 {
			t.Errorf("%s%v = %v, want > 0", c.name, c.labels, v)
		}
	}
	if _, ok := fams["nas_gates_pending"]; !ok {
		t.Error("no nas_gates_pending")
	}
	if n := len(fams["nas_cache_lookups_total"].GetMetric()); n != 6 {
		t.Errorf("nas_cache_lookups_total has %d series, want hit and miss of 3 caches", n)
	}
	secrets := []string{w.repo, "opsrepo", w.key, "walrus", w.role, w.lease.ID, w.lease.Branch, w.lease.Creds.AccessKeyID}
	for name, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				for _, s := range secrets {
					if strings.Contains(l.GetValue(), s) {
						t.Errorf("%s label %s=%q reveals %q", name, l.GetName(), l.GetValue(), s)
					}
				}
			}
		}
	}
}

// accessLine is an access-log line as the JSON handler writes it.
type accessLine struct {
	Msg       string `json:"msg"`
	Method    string `json:"method"`
	API       string `json:"api"`
	Operation string `json:"operation"`
	Repo      string `json:"repo"`
	Branch    string `json:"branch"`
	Status    int    `json:"status"`
	BytesIn   int64  `json:"bytes_in"`
	BytesOut  int64  `json:"bytes_out"`
	Duration  int64  `json:"duration"`
	RequestID string `json:"request_id"`
	Principal string `json:"principal"`
}

func TestAccessLogOneLinePerRequestWithoutSecrets(t *testing.T) {
	var buf syncBuffer
	srv := nastest.Start(t, nastest.Options{Log: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	w := runWorkload(t, srv)
	var lines []accessLine
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		var l accessLine
		must(t, json.Unmarshal(sc.Bytes(), &l))
		if l.Msg == "access" {
			lines = append(lines, l)
		}
	}
	// CreateBucket, PutObject, GetObject, ListObjectsV2, commit/create,
	// branch/create, propose/create, role/put, role/get (ensureRole),
	// lease/create, the denied PutObject, the presigned GetObject.
	if len(lines) != 12 {
		t.Fatalf("%d access lines, want 12:\n%s", len(lines), buf.String())
	}
	byOp := map[string][]accessLine{}
	for _, l := range lines {
		if l.RequestID == "" || l.Method == "" || l.API == "" || l.Status == 0 || l.Principal == "" {
			t.Errorf("incomplete access line %+v", l)
		}
		byOp[l.Operation] = append(byOp[l.Operation], l)
	}
	// The owner named no branch: "" is the repository's default.
	put := byOp["PutObject"]
	if len(put) != 2 || put[0].Repo != w.repo || put[0].Branch != "" || put[0].Principal != "owner" || put[0].BytesIn == 0 {
		t.Errorf("owner's PutObject: %+v", put)
	}
	if len(put) == 2 && (put[1].Status != http.StatusForbidden || put[1].Principal != w.lease.ID || put[1].Branch != w.lease.Branch) {
		t.Errorf("lease's denied PutObject: %+v", put[1])
	}
	gets := byOp["GetObject"]
	if len(gets) != 2 || gets[1].BytesOut != int64(len("hello metrics")) || gets[1].Principal != w.lease.ID {
		t.Errorf("GetObjects: %+v", gets)
	}
	if c := byOp["commit/create"]; len(c) != 1 || c[0].API != "control" {
		t.Errorf("commit: %+v", c)
	}
	log := buf.String()
	sig := presignedParam(t, w.presigned, "X-Amz-Signature")
	for what, s := range map[string]string{"presigned signature": sig, "session token": w.lease.Creds.SessionToken,
		"lease secret": w.lease.Creds.SecretAccessKey, "owner secret": nastest.SecretKey} {
		if s == "" || strings.Contains(log, s) {
			t.Errorf("the log holds the %s (%q)", what, s)
		}
	}
}

// presignedParam returns a query parameter of a presigned URL.
func presignedParam(t *testing.T, u, name string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	must(t, err)
	return req.URL.Query().Get(name)
}
