package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/agentnas/nas/source"
)

// The lazy-source workload: a remote bucket (gofakes3 with its in-memory
// backend, on loopback in this process) attached to a repository of the
// in-process gateway. It measures, in one run, what attaching costs against
// listing the same bucket, what a first read (fetch, verify, chunk, store,
// stream) costs against a GET from the remote directly, and whether a
// second read is as fast as reading an object that was PUT into the
// gateway. The remote answers from memory, so "direct" is the cost of
// moving bytes from it, not of a disk or a network.

// init registers the source workload.
func init() {
	Register(Workload{Name: "source", Doc: "lazy sources: attach time vs remote objects against listing them, first read against a direct GET from the remote, second read against a local object", Run: runSource})
}

// sourceSizes are the sizes of the source workload in a mode.
type sourceSizes struct {
	attach []int   // remote objects per attach-curve point
	reads  []int64 // object sizes of the first and second reads
	// firstBytes bounds the bytes a first-read run reads: a run reads
	// min(32, firstBytes/size) new objects, at least one.
	firstBytes int64
}

// sourceSizesFor returns the sizes of the source workload in mode.
func sourceSizesFor(mode string) sourceSizes {
	switch mode {
	case "tiny":
		return sourceSizes{attach: []int{100, 1000}, reads: []int64{256 << 10, 4 << 20}, firstBytes: 4 << 20}
	case "quick":
		return sourceSizes{attach: []int{1000, 10000}, reads: []int64{1 << 20, 64 << 20}, firstBytes: 16 << 20}
	}
	return sourceSizes{attach: []int{1000, 10000, 100000}, reads: []int64{1 << 20, 64 << 20}, firstBytes: 128 << 20}
}

// firstObjects is how many new objects one first-read run reads.
func (s sourceSizes) firstObjects(size int64) int {
	return max(1, min(32, int(s.firstBytes/max(size, 1))))
}

// Subjects of the source workload.
const (
	srcFirst    = "nas, first read"
	srcSecond   = "nas, materialised"
	srcLocal    = "nas, object PUT into the gateway"
	srcDirect   = "remote, direct GET"
	srcPut      = "nas, PUT of new objects"
	srcRemoteAK = "AKIANASBENCHREMOTE01" // gofakes3 checks no signature
	srcRemoteSK = "nasbench/remote/secret"
)

// srcRemote is the remote bucket store: gofakes3 over s3mem on loopback.
type srcRemote struct {
	url    string
	mem    *s3mem.Backend
	client *Client // direct GETs and listings, the load generator's client
	stop   func() error
}

// startSrcRemote starts an empty remote on loopback.
func startSrcRemote(ctx context.Context) (*srcRemote, error) {
	mem := s3mem.New()
	url, stop, err := ServeHandler(ctx, gofakes3.New(mem).Server())
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	creds := aws.Credentials{AccessKeyID: srcRemoteAK, SecretAccessKey: srcRemoteSK}
	return &srcRemote{url: url, mem: mem, client: NewClient(url, "us-east-1", creds), stop: stop}, nil
}

// close stops the remote and its client.
func (r *srcRemote) close() error {
	r.client.Close()
	return r.stop()
}

// put stores body at key of bucket on the remote, straight into its
// backend.
func (r *srcRemote) put(bucket, key string, body []byte) error {
	if _, err := r.mem.PutObject(bucket, key, map[string]string{}, bytes.NewReader(body), int64(len(body)), nil); err != nil {
		return fmt.Errorf("remote put %s/%s: %w", bucket, key, err)
	}
	return nil
}

// attach attaches the whole of remote bucket to repo at "ds/" (making the
// repository first) and waits until the import is done.
func (r *srcRemote) attach(ctx context.Context, t *Target, bucket, repo string) (*source.Info, error) {
	if err := t.Client.CreateBucket(ctx, repo); err != nil {
		return nil, err
	}
	return r.attachTo(ctx, t, bucket, repo)
}

// attachTo attaches the whole of remote bucket to the existing repo at
// "ds/" and waits until the import is done.
func (r *srcRemote) attachTo(ctx context.Context, t *Target, bucket, repo string) (*source.Info, error) {
	reg := t.Gateway.Sources
	info, err := reg.Add(ctx, source.Spec{Repo: repo, Prefix: "ds/", URL: "s3://" + bucket, Endpoint: r.url,
		AccessKey: srcRemoteAK, SecretKey: srcRemoteSK})
	if err != nil {
		return nil, fmt.Errorf("attach s3://%s: %w", bucket, err)
	}
	return waitReady(ctx, reg, info.ID)
}

// waitReady waits for the attach or refresh of id and checks it ended well.
func waitReady(ctx context.Context, reg *source.Registry, id string) (*source.Info, error) {
	info, err := reg.Wait(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", id, err)
	}
	if info.State != "ready" {
		return nil, fmt.Errorf("source %s: %s: %s", id, info.State, info.Error)
	}
	return info, nil
}

// getTimed GETs an object whole and returns its length, the time to its
// first byte and the time to its last.
func getTimed(ctx context.Context, c *Client, bucket, key string) (n int64, ttfb, total time.Duration, err error) {
	start := time.Now()
	resp, err := c.Do(ctx, "get "+key, http.MethodGet, objectURL(c.Endpoint, bucket, key, nil), nil, nil, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	var one [1]byte
	if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
		return 0, 0, 0, fmt.Errorf("get %s: %w", key, err)
	}
	ttfb = time.Since(start)
	rest, err := io.CopyBuffer(io.Discard, onlyReader{resp.Body}, make([]byte, 256<<10))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("get %s: %w", key, err)
	}
	return 1 + rest, ttfb, time.Since(start), nil
}

// runSource runs the source workload: the attach curve, then the first
// and second reads at every size.
func runSource(ctx context.Context, e *Env) ([]*Result, error) {
	sz := sourceSizesFor(e.Profile.Mode)
	rm, err := startSrcRemote(ctx)
	if err != nil {
		return nil, err
	}
	defer rm.close()
	var out []*Result
	r, err := sourceAttachCurve(ctx, e, rm, sz)
	if err != nil {
		return out, fmt.Errorf("attach: %w", err)
	}
	out = append(out, r)
	for i, size := range sz.reads {
		r, err := sourceFirstRead(ctx, e, rm, sz, size, i)
		if err != nil {
			return out, fmt.Errorf("first read, %s: %w", FormatSize(size), err)
		}
		out = append(out, r)
	}
	for i, size := range sz.reads {
		r, err := sourceSecondRead(ctx, e, rm, size, i)
		if err != nil {
			return out, fmt.Errorf("second read, %s: %w", FormatSize(size), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// sourceAttachCurve attaches buckets of growing size, each point on a fresh
// gateway and every attach into a new repository, alternating with a full
// listing of the same bucket from the same remote.
func sourceAttachCurve(ctx context.Context, e *Env, rm *srcRemote, sz sourceSizes) (*Result, error) {
	att := Series{Name: "attach (list, import, until ready)"}
	lst := Series{Name: "ListObjectsV2 of the same bucket (all pages)"}
	reps := e.Profile.curveReps()
	var notes []string
	for _, n := range sz.attach {
		e.Logf("  source: attach of %d remote objects", n)
		bucket := fmt.Sprintf("attach-%d", n)
		if err := rm.mem.CreateBucket(bucket); err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			if err := rm.put(bucket, fmt.Sprintf("part-%07d.json", i), fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
				return nil, err
			}
		}
		da, dl, err := sourceAttachPoint(ctx, e, rm, bucket, n, reps)
		if err != nil {
			return nil, err
		}
		pa, pl := point(n, da), point(n, dl)
		att.Points, lst.Points = append(att.Points, pa), append(lst.Points, pl)
		notes = append(notes, fmt.Sprintf("%s objects: attach %s ms, listing %s ms, attach / listing %s, %s objects/s attached.",
			groupThousands(int64(n)), formatFloat(pa.Y), formatFloat(pl.Y), formatRatio(pa.Y/pl.Y), formatFloat(float64(n)/(pa.Y/1000))))
		// The remote keeps only what later points need.
		if err := rm.mem.ForceDeleteBucket(bucket); err != nil {
			return nil, err
		}
	}
	notes = append(notes, "Attach is the owner's call returning once the import committed (source.Registry Add, then Wait): "+
		"a probe listing of one key, a versioning check, one listing of every key (pages of 1,000) and one lazy entry per object imported into the branch, a commit per 10,000. "+
		"The listing is the same ListObjectsV2 pages from the same remote (gofakes3 in memory, on loopback), by the load generator's client. "+
		"Each point on a fresh gateway, each attach into a new repository.")
	return &Result{Case: "time per attach", Curve: &Curve{Name: "attach", Title: "Attach time vs remote objects",
		XLabel: "remote objects", YLabel: "ms per attach", Series: []Series{att, lst}}, Notes: notes}, nil
}

// sourceAttachPoint attaches bucket (n objects) reps+1 times to new
// repositories of a fresh gateway, each attach followed by a listing of
// the bucket, and returns the times of all but the first of each.
func sourceAttachPoint(ctx context.Context, e *Env, rm *srcRemote, bucket string, n, reps int) (attaches, listings []time.Duration, err error) {
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer Targets{t}.Close()
	for r := 0; r < reps+1; r++ { // the first of each is a warm-up
		repo := fmt.Sprintf("attach-%d-%d", n, r)
		if err := t.Client.CreateBucket(ctx, repo); err != nil {
			return nil, nil, err
		}
		start := time.Now()
		info, err := rm.attachTo(ctx, t, bucket, repo)
		a := time.Since(start)
		if err != nil {
			return nil, nil, err
		}
		if info.Added != int64(n) {
			return nil, nil, fmt.Errorf("attached %d objects of %d", info.Added, n)
		}
		start = time.Now()
		lp, err := rm.client.List(ctx, bucket, "", "", 1000)
		l := time.Since(start)
		if err != nil {
			return nil, nil, err
		}
		if lp.Keys != n {
			return nil, nil, fmt.Errorf("listed %d keys of %d", lp.Keys, n)
		}
		if r > 0 {
			attaches, listings = append(attaches, a), append(listings, l)
		}
	}
	return attaches, listings, nil
}

// sourceFirstRead reads new remote objects of size through the gateway
// (not yet materialised) and directly from the remote, interleaved run by
// run. Each run reads new objects with new content, put on the remote and
// pinned by a refresh before the clock starts; both subjects read the same
// objects in a run.
func sourceFirstRead(ctx context.Context, e *Env, rm *srcRemote, sz sourceSizes, size int64, sizeIdx int) (*Result, error) {
	e.Logf("  source: first read, %s", FormatSize(size))
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	fr := &firstRead{t: t, rm: rm, content: DefaultContent(), size: size, sizeIdx: sizeIdx,
		bucket: fmt.Sprintf("first-%d", sizeIdx), repo: fmt.Sprintf("first-%d", sizeIdx),
		prepared: -1, ttfbs: map[string][]time.Duration{}}
	if err := rm.mem.CreateBucket(fr.bucket); err != nil {
		return nil, err
	}
	defer rm.mem.ForceDeleteBucket(fr.bucket)
	if err := fr.seed(ctx); err != nil {
		return nil, err
	}
	fr.k = sz.firstObjects(size)
	rows, err := Compare(ctx, e.Profile.Reps, []Subject{
		{Name: srcFirst, Note: "not yet materialised: the gateway fetches the object from the remote, verifies its MD5, chunks and stores it while streaming it",
			Measure: fr.read(srcFirst, t.Client, fr.repo, "ds/")},
		{Name: srcDirect, Baseline: true, Note: "the same objects, GET from the remote by the load generator's client",
			Measure: fr.read(srcDirect, rm.client, fr.bucket, "")},
		{Name: srcPut, Baseline: true, Note: "as many new objects of the same size PUT into the same repository: the chunking and storing a first read does too, without the fetch",
			Measure: fr.put},
	}, ByThroughput)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if ds := fr.ttfbs[rows[i].Subject]; len(ds) > 0 && rows[i].Skipped == "" {
			m := Metric{Name: "ttfb p50", Unit: "ms", Value: medianMS(ds), Better: Lower}
			rows[i].Metrics = append(rows[i].Metrics[:1], append([]Metric{m}, rows[i].Metrics[1:]...)...)
		}
	}
	notes := []string{fmt.Sprintf("%d new object%s per run, read one at a time; ttfb is the time to the first byte of the body. "+
		"The workload runs on the in-process gateway alone: a lazy source is a feature of ours, not of the other targets.", fr.k, plural(fr.k))}
	if f, d := metricOf(rows, srcFirst, "ttfb p50"), metricOf(rows, srcDirect, "ttfb p50"); f > 0 && d > 0 {
		notes = append(notes, fmt.Sprintf("Time to first byte: %s ms through the gateway, %s ms direct (ratio %s).", formatFloat(f), formatFloat(d), formatRatio(d/f)))
	}
	return &Result{Case: "first read, " + FormatSize(size), Reference: srcFirst, Rows: rows, Notes: notes}, nil
}

// firstRead is the first-read workload at one size: a remote bucket
// attached to a repository of the reference target, and k new objects
// per run.
type firstRead struct {
	t            *Target
	rm           *srcRemote
	content      *Content
	info         *source.Info // the attached source
	bucket, repo string
	size         int64
	sizeIdx      int
	k            int                        // objects per run
	prepared     int                        // the last run whose objects are on the remote and pinned
	ttfbs        map[string][]time.Duration // times to first byte, by subject
}

// stamp is the content stamp of object i of run rep.
func (fr *firstRead) stamp(rep, i int) uint64 {
	return 1<<48 | uint64(fr.sizeIdx)<<40 | uint64(rep)<<20 | uint64(i)
}

// key is the remote key of object i of run rep.
func (fr *firstRead) key(rep, i int) string { return fmt.Sprintf("r%03d/o%03d", rep, i) }

// seed attaches the bucket with a seed object, read both ways first to
// open the connections, then empties the bucket.
func (fr *firstRead) seed(ctx context.Context) error {
	rm := fr.rm
	if err := rm.put(fr.bucket, "seed", fr.content.Bytes(fr.stamp(1<<19, 0), fr.size)); err != nil {
		return err
	}
	info, err := rm.attach(ctx, fr.t, fr.bucket, fr.repo)
	if err != nil {
		return err
	}
	fr.info = info
	if _, _, _, err := getTimed(ctx, fr.t.Client, fr.repo, "ds/seed"); err != nil {
		return err
	}
	if _, _, _, err := getTimed(ctx, rm.client, fr.bucket, "seed"); err != nil {
		return err
	}
	if err := rm.mem.ForceDeleteBucket(fr.bucket); err != nil { // the seed's memory back
		return err
	}
	return rm.mem.CreateBucket(fr.bucket)
}

// prepare puts run rep's objects on the remote, freeing the last run's,
// and pins them with a refresh; a run already prepared is left as it is.
func (fr *firstRead) prepare(ctx context.Context, rep int) error {
	if rep == fr.prepared {
		return nil
	}
	if fr.prepared >= 0 { // the last run's objects are read: free them
		for i := 0; i < fr.k; i++ {
			if _, err := fr.rm.mem.DeleteObject(fr.bucket, fr.key(fr.prepared, i)); err != nil {
				return err
			}
		}
	}
	for i := 0; i < fr.k; i++ {
		if err := fr.rm.put(fr.bucket, fr.key(rep, i), fr.content.Bytes(fr.stamp(rep, i), fr.size)); err != nil {
			return err
		}
	}
	reg := fr.t.Gateway.Sources
	if _, err := reg.Refresh(ctx, fr.info.ID, ""); err != nil {
		return err
	}
	ri, err := waitReady(ctx, reg, fr.info.ID)
	if err != nil {
		return err
	}
	if ri.Added != int64(fr.k) {
		return fmt.Errorf("refresh pinned %d new objects, want %d", ri.Added, fr.k)
	}
	fr.prepared = rep
	return nil
}

// read measures subject name: GETs of a run's objects through c, from
// bucket under prefix. The first read checks that every object came from
// the remote.
func (fr *firstRead) read(name string, c *Client, bucket, prefix string) func(ctx context.Context, rep int) (Sample, error) {
	return func(ctx context.Context, rep int) (Sample, error) {
		if err := fr.prepare(ctx, rep); err != nil {
			return Sample{}, err
		}
		fetches := fr.t.Gateway.Sources.Materializer().Stats().Fetches
		var s Sample
		for i := 0; i < fr.k; i++ {
			n, ttfb, total, err := getTimed(ctx, c, bucket, prefix+fr.key(rep, i))
			if err == nil && n != fr.size {
				err = fmt.Errorf("read %d bytes of %d", n, fr.size)
			}
			if err != nil {
				return Sample{}, err
			}
			s.Ops++
			s.Bytes += n
			s.Elapsed += total
			s.Latency = append(s.Latency, total)
			fr.ttfbs[name] = append(fr.ttfbs[name], ttfb)
		}
		if name == srcFirst {
			if got := fr.t.Gateway.Sources.Materializer().Stats().Fetches - fetches; got < int64(fr.k) {
				return Sample{}, fmt.Errorf("%d first reads made %d remote fetches: something was already local", fr.k, got)
			}
		}
		return s, nil
	}
}

// put measures the PUT of as many new objects of the same size into the
// repository.
func (fr *firstRead) put(ctx context.Context, rep int) (Sample, error) {
	var s Sample
	for i := 0; i < fr.k; i++ {
		body := fr.content.Reader(fr.stamp(rep, i)|1<<47, fr.size)
		begin := time.Now()
		if err := fr.t.Client.Put(ctx, fr.repo, "put/"+fr.key(rep, i), body, fr.size); err != nil {
			return Sample{}, err
		}
		d := time.Since(begin)
		s.Ops++
		s.Bytes += fr.size
		s.Elapsed += d
		s.Latency = append(s.Latency, d)
	}
	return s, nil
}

// metricOf is the value of metric name in the row of subject (0 if none).
func metricOf(rows []Row, subject, name string) float64 {
	for _, r := range rows {
		if r.Subject == subject {
			if m, ok := metric(r.Metrics, name); ok {
				return m.Value
			}
		}
	}
	return 0
}

// sourceSecondRead reads a materialised remote object against an object of
// the same size PUT into the same repository, and against a direct GET of
// the remote object, interleaved. It fails if a second read reaches the
// remote.
func sourceSecondRead(ctx context.Context, e *Env, rm *srcRemote, size int64, sizeIdx int) (*Result, error) {
	e.Logf("  source: second read, %s", FormatSize(size))
	p := e.Profile
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	defer Targets{t}.Close()
	bucket, repo := fmt.Sprintf("second-%d", sizeIdx), fmt.Sprintf("second-%d", sizeIdx)
	if err := rm.mem.CreateBucket(bucket); err != nil {
		return nil, err
	}
	defer rm.mem.ForceDeleteBucket(bucket)
	content := DefaultContent()
	if err := rm.put(bucket, "obj", content.Bytes(2<<48|uint64(sizeIdx)<<40, size)); err != nil {
		return nil, err
	}
	if _, err := rm.attach(ctx, t, bucket, repo); err != nil {
		return nil, err
	}
	if err := t.Client.Put(ctx, repo, "local/obj", content.Reader(2<<48|uint64(sizeIdx)<<40|1, size), size); err != nil {
		return nil, err
	}
	mat := t.Gateway.Sources.Materializer()
	before := mat.Stats().Fetches
	if _, _, _, err := getTimed(ctx, t.Client, repo, "ds/obj"); err != nil { // materialise
		return nil, err
	}
	fetches := mat.Stats().Fetches
	if fetches == before {
		return nil, errors.New("the first read made no remote fetch")
	}
	load := Load{Concurrency: 1, Duration: p.Duration, Ops: p.opsFor(size, 1), Warmup: p.Warmup, MinOps: 1}
	get := func(c *Client, bucket, key string) func(ctx context.Context, rep int) (Sample, error) {
		return func(ctx context.Context, rep int) (Sample, error) {
			return load.Run(ctx, func(ctx context.Context, _, _ int) (int64, error) {
				n, err := c.Get(ctx, bucket, key)
				if err == nil && n != size {
					err = fmt.Errorf("get %s: %d bytes of %d", key, n, size)
				}
				return n, err
			})
		}
	}
	rows, err := Compare(ctx, p.Reps, []Subject{
		{Name: srcSecond, Note: "read again after its first read: served from the chunk store", Measure: get(t.Client, repo, "ds/obj")},
		{Name: srcLocal, Baseline: true, Note: "same size, same repository", Measure: get(t.Client, repo, "local/obj")},
		{Name: srcDirect, Baseline: true, Note: "the same object from the remote", Measure: get(rm.client, bucket, "obj")},
	}, ByThroughput)
	if err != nil {
		return nil, err
	}
	if got := mat.Stats().Fetches; got != fetches {
		return nil, fmt.Errorf("second reads went to the remote: %d fetches", got-fetches)
	}
	return &Result{Case: "second read, " + FormatSize(size), Reference: srcSecond, Rows: rows,
		Notes: []string{"No second read reached the remote (the materialiser's fetch count did not move); every GET from the page cache."}}, nil
}
