package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/sync/errgroup"
)

// LakeFS is a lakeFS server on this machine (outside this repository,
// built for measurement only) that the merge workload runs the same
// rounds against: its REST API for branches, commits, diffs and merges,
// its S3 gateway for the objects.
type LakeFS struct {
	Endpoint          string // http://host:port, no trailing slash
	AccessKey, Secret string
}

// lakeClient talks to one lakeFS server.
type lakeClient struct {
	l   LakeFS
	hc  *http.Client
	s3  *Client
	rep string
}

func newLakeClient(l LakeFS, repo string) *lakeClient {
	return &lakeClient{l: l, hc: &http.Client{Timeout: 10 * time.Minute}, rep: repo,
		s3: NewClient(l.Endpoint, "us-east-1", aws.Credentials{AccessKeyID: l.AccessKey, SecretAccessKey: l.Secret})}
}

// call sends a REST request (in: JSON body or nil) and decodes the
// answer into out (nil: discarded).
func (c *lakeClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.l.Endpoint+"/api/v1"+path, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(c.l.AccessKey, c.l.Secret)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("lakeFS %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("lakeFS %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("lakeFS %s %s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// put stores small objects under keys on branch br, sixteen at a time,
// through the S3 gateway.
func (c *lakeClient) put(ctx context.Context, br string, keys []string, body []byte) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, k := range keys {
		g.Go(func() error { return c.s3.Put(gctx, c.rep, br+"/"+k, bytes.NewReader(body), int64(len(body))) })
	}
	return g.Wait()
}

// commit commits br and returns the commit ID.
func (c *lakeClient) commit(ctx context.Context, br, msg string) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	err := c.call(ctx, http.MethodPost, "/repositories/"+c.rep+"/branches/"+url.PathEscape(br)+"/commits",
		map[string]string{"message": msg}, &out)
	return out.ID, err
}

// load creates the repository with n committed objects on main, keyed as
// the curves' trees are.
func (c *lakeClient) load(ctx context.Context, n int) error {
	err := c.call(ctx, http.MethodPost, "/repositories", map[string]any{"name": c.rep,
		"storage_namespace": "local://" + c.rep, "default_branch": "main"}, nil)
	if err != nil {
		return err
	}
	const batch = 10000
	for i := 0; i < n; i += batch {
		keys := make([]string, 0, batch)
		for k := i; k < min(n, i+batch); k++ {
			keys = append(keys, curveKey(k))
		}
		if err := c.put(ctx, "main", keys, []byte("0")); err != nil {
			return err
		}
	}
	_, err = c.commit(ctx, "main", "import")
	return err
}

// round is mergeRound against lakeFS: fork, stage the same spread keys,
// commit (timed), move main, diff (timed, pages of 1,000, lakeFS's
// largest), merge (timed).
func (c *lakeClient) round(ctx context.Context, n, changes, r int) (mergeSample, error) {
	var s mergeSample
	run := fmt.Sprintf("run-%d-%d", changes, r)
	var head struct {
		CommitID string `json:"commit_id"`
	}
	if err := c.call(ctx, http.MethodGet, "/repositories/"+c.rep+"/branches/main", nil, &head); err != nil {
		return s, err
	}
	if err := c.call(ctx, http.MethodPost, "/repositories/"+c.rep+"/branches",
		map[string]string{"name": run, "source": "main"}, nil); err != nil {
		return s, err
	}
	step := max(1, n/max(changes, 1))
	keys := make([]string, changes)
	for k := range keys {
		keys[k] = curveKey((k*step + r) % max(n, 1))
	}
	if err := c.put(ctx, run, keys, []byte(fmt.Sprint(r+1))); err != nil {
		return s, err
	}
	start := time.Now()
	id, err := c.commit(ctx, run, "run")
	if err != nil {
		return s, err
	}
	s.commit = time.Since(start)

	moves := make([]string, mainMoves)
	for k := range moves {
		moves[k] = fmt.Sprintf("main/r%d-%d/k%04d", changes, r, k)
	}
	if err := c.put(ctx, "main", moves, []byte("m")); err != nil {
		return s, err
	}
	if _, err := c.commit(ctx, "main", "main moves"); err != nil {
		return s, err
	}

	start = time.Now()
	seen, after := 0, ""
	for {
		var page struct {
			Results    []json.RawMessage `json:"results"`
			Pagination struct {
				HasMore    bool   `json:"has_more"`
				NextOffset string `json:"next_offset"`
			} `json:"pagination"`
		}
		q := url.Values{"amount": {"1000"}, "after": {after}}
		if err := c.call(ctx, http.MethodGet, "/repositories/"+c.rep+"/refs/"+head.CommitID+"/diff/"+id+"?"+q.Encode(), nil, &page); err != nil {
			return s, err
		}
		seen += len(page.Results)
		if !page.Pagination.HasMore {
			break
		}
		after = page.Pagination.NextOffset
	}
	s.diff = time.Since(start)
	if seen != changes {
		return s, fmt.Errorf("lakeFS diff of %d changes listed %d", changes, seen)
	}

	start = time.Now()
	if err := c.call(ctx, http.MethodPost, "/repositories/"+c.rep+"/refs/"+url.PathEscape(run)+"/merge/main",
		map[string]string{"message": "merge"}, nil); err != nil {
		return s, err
	}
	s.merge = time.Since(start)
	return s, nil
}

// lakeFSRounds loads a tree of n objects into lakeFS and runs reps rounds
// of changes spread changes: what the merge workload compares with.
func lakeFSRounds(ctx context.Context, e *Env, n, changes, reps int) ([3][]time.Duration, error) {
	var ds [3][]time.Duration
	c := newLakeClient(*e.LakeFS, "nasbench"+e.runID)
	defer c.s3.Close()
	e.Logf("  merge: loading %d objects into lakeFS", n)
	if err := c.load(ctx, n); err != nil {
		return ds, fmt.Errorf("lakeFS: %w", err)
	}
	for r := 0; r < reps; r++ {
		s, err := c.round(ctx, n, changes, r)
		if err != nil {
			return ds, fmt.Errorf("lakeFS round %d: %w", r, err)
		}
		ds[0], ds[1], ds[2] = append(ds[0], s.commit), append(ds[1], s.diff), append(ds[2], s.merge)
	}
	return ds, nil
}
