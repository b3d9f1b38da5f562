package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// The object workloads: PUT, GET (warm and cold), HEAD, LIST, DELETE and a
// mix, each against every target and the physical baselines, every case on
// freshly started targets.

// Baseline subjects of the object workloads.
const (
	baseFiles = "files"         // DirStore in the scratch directory
	baseHTTP  = "loopback-http" // Client against NullHandler
)

// objSubject is one store an object workload drives.
type objSubject struct {
	name     string
	baseline bool
	note     string
	store    ObjectStore
	bucket   string
	dir      string // where its data lives locally ("" for endpoints)
	target   *Target
	skip     string // why it is left out (a setup step failed)
}

// fail leaves a subject out of the comparison because err stopped its
// setup; the others go on.
func (s *objSubject) fail(err error) { s.skip = "failed: " + err.Error() }

// live returns the subjects not left out.
func live(subs []*objSubject) []*objSubject {
	var out []*objSubject
	for _, s := range subs {
		if s.skip == "" {
			out = append(out, s)
		}
	}
	return out
}

// objectSubjects starts fresh targets and the named baselines, each with a
// bucket named bucket, and returns them with a function that stops and
// removes everything.
func (e *Env) objectSubjects(ctx context.Context, bucket string, baselines ...string) ([]*objSubject, func(), error) {
	ts, err := e.StartTargets(ctx)
	if err != nil {
		return nil, nil, err
	}
	var subs []*objSubject
	var stops []func()
	cleanup := func() {
		for _, s := range stops {
			s()
		}
		if err := ts.Close(); err != nil {
			e.Log.Warn("closing targets", "err", err)
		}
	}
	for _, t := range ts {
		s := &objSubject{name: t.Name, store: t.Client, dir: t.DataDir, target: t}
		if s.bucket, err = t.Bucket(ctx, bucket); err != nil {
			s.fail(err)
		}
		subs = append(subs, s)
	}
	for _, name := range baselines {
		switch name {
		case baseFiles:
			d, err := e.TempDir("files")
			if err != nil {
				cleanup()
				return nil, nil, err
			}
			stops = append(stops, func() { os.RemoveAll(d) })
			ds := &DirStore{Root: d}
			if err := ds.CreateBucket(ctx, bucket); err != nil {
				cleanup()
				return nil, nil, err
			}
			subs = append(subs, &objSubject{name: baseFiles, baseline: true, store: ds, bucket: bucket, dir: d})
		case baseHTTP:
			url, stop, err := ServeHandler(ctx, NewNullHandler())
			if err != nil {
				cleanup()
				return nil, nil, err
			}
			c := NewClient(url, "us-east-1", BenchCredentials())
			stops = append(stops, func() { c.Close(); _ = stop() })
			subs = append(subs, &objSubject{name: baseHTTP, baseline: true, store: c, bucket: bucket})
		}
	}
	return subs, cleanup, nil
}

// objKey names object i of a run.
func objKey(rep, i int) string { return fmt.Sprintf("r%d/o%08d", rep, i) }

// stamp makes the content stamp of object i of a run unique.
func stamp(rep, i int) uint64 { return uint64(rep)<<40 | uint64(i) }

// populate PUTs n objects of size (keys from key) into every subject,
// eight at a time.
func populate(ctx context.Context, s *objSubject, n int, size int64, key func(i int) string) error {
	c := DefaultContent()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			return s.store.Put(gctx, s.bucket, key(i), c.Reader(stamp(1<<20, i), size), size)
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("populate %s: %w", s.name, err)
	}
	return nil
}

// writeNotes qualifies the subjects of workloads that write.
func writeNotes(subs []*objSubject) {
	for _, s := range subs {
		switch {
		case s.target != nil && s.target.Kind == KindGoFakeS3:
			s.note = "writes files without fsync, behind one lock for all writers"
		case s.name == baseFiles:
			s.note = "create, write, fsync the file, fsync its directory"
		case s.name == baseHTTP:
			s.note = "a handler that reads and discards the body: the HTTP exchange alone"
		}
	}
}

func figuresFor(size int64) Figures {
	if size < 1<<20 {
		return ByRate
	}
	return ByThroughput
}

func toSubjects(subs []*objSubject, measure func(s *objSubject, rep int) (Sample, error)) []Subject {
	out := make([]Subject, len(subs))
	for i, s := range subs {
		out[i] = Subject{Name: s.name, Baseline: s.baseline, Note: s.note, Skip: s.skip,
			Measure: func(ctx context.Context, rep int) (Sample, error) { return measure(s, rep) }}
	}
	return out
}

func runPut(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	var out []*Result
	var measured []caseRows
	c := DefaultContent()
	for _, cs := range p.Cases {
		e.Logf("  put %s", caseName(cs.Size, cs.Concurrency))
		subs, cleanup, err := e.objectSubjects(ctx, "put", baseFiles, baseHTTP)
		if err != nil {
			return out, err
		}
		writeNotes(subs)
		load := Load{Concurrency: cs.Concurrency, Duration: p.Duration, Ops: p.opsFor(cs.Size, cs.Concurrency), Warmup: p.Warmup, MinOps: cs.Concurrency}
		reps := p.Reps
		if cs.Size >= 16<<20 {
			// Large objects: at least one per client per run, however long it
			// takes, so runs are bounded by bytes, not by time.
			reps = p.repsFor(int64(load.Ops) * cs.Size)
		}
		rows, err := Compare(ctx, reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
			put := func(size int64) Op {
				return func(ctx context.Context, _, seq int) (int64, error) {
					return size, s.store.Put(ctx, s.bucket, objKey(rep, seq), c.Reader(stamp(rep, seq), size), size)
				}
			}
			l := load
			l.WarmupOp = put(min(cs.Size, 4<<10)) // warm-up opens connections, it need not fill the disk
			return l.Run(ctx, put(cs.Size))
		}), figuresFor(cs.Size))
		cleanup()
		if err != nil {
			return out, err
		}
		res := &Result{Case: caseName(cs.Size, cs.Concurrency), Rows: rows}
		if reps < p.Reps {
			res.Notes = append(res.Notes, fmt.Sprintf("%d runs, not %d, to bound the disk space a case uses.", reps, p.Reps))
		}
		out = append(out, res)
		measured = append(measured, caseRows{size: cs.Size, conc: cs.Concurrency, rows: rows})
	}
	return append(out, clientCurves("put", "PUT", measured)...), nil
}

// getObjects is how many distinct objects a GET case reads in turn.
func (p Profile) getObjects(size int64) int {
	return min(256, max(1, int(p.RunBytes/max(size, 1))/4))
}

func runGet(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	var out []*Result
	var measured []caseRows
	for _, cs := range p.Cases {
		e.Logf("  get %s", caseName(cs.Size, cs.Concurrency))
		subs, cleanup, err := e.objectSubjects(ctx, "get", baseFiles, baseHTTP)
		if err != nil {
			return out, err
		}
		n := p.getObjects(cs.Size)
		key := func(i int) string { return objKey(0, i) }
		for _, s := range live(subs) {
			if err := populate(ctx, s, n, cs.Size, key); err != nil {
				s.fail(err)
			}
		}
		load := Load{Concurrency: cs.Concurrency, Duration: p.Duration, Ops: p.opsFor(cs.Size, cs.Concurrency), Warmup: p.Warmup, MinOps: cs.Concurrency}
		rows, err := Compare(ctx, p.Reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
			return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
				got, err := s.store.Get(ctx, s.bucket, key(seq%n))
				if err == nil && got != cs.Size {
					err = fmt.Errorf("get: %d bytes, want %d", got, cs.Size)
				}
				return got, err
			})
		}), figuresFor(cs.Size))
		cleanup()
		if err != nil {
			return out, err
		}
		out = append(out, &Result{Case: caseName(cs.Size, cs.Concurrency), Rows: rows,
			Notes: []string{fmt.Sprintf("%d object%s read in turn, from the page cache.", n, plural(n))}})
		measured = append(measured, caseRows{size: cs.Size, conc: cs.Concurrency, rows: rows})
	}
	return append(out, clientCurves("get", "GET", measured)...), nil
}

func runGetCold(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	subs, cleanup, err := e.objectSubjects(ctx, "cold", baseFiles)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	n := p.ColdObjects
	key := func(i int) string { return objKey(0, i) }
	var mu sync.Mutex // guards evictions
	evictions := map[string]string{}
	subjects := toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
		ev, err := EvictDir(s.dir, e.DropCaches)
		if err != nil {
			return Sample{}, err
		}
		mu.Lock()
		evictions[s.name] = ev.String()
		mu.Unlock()
		load := Load{Concurrency: 1, Ops: n}
		return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
			return s.store.Get(ctx, s.bucket, key(seq%n))
		})
	})
	for i, s := range subs {
		if s.skip != "" {
			continue
		}
		if s.dir == "" && !e.DropCaches {
			subjects[i].Skip = "an endpoint's page cache can only be emptied with --drop-caches (and only on this machine)"
			continue
		}
		if err := populate(ctx, s, n, p.ColdSize, key); err != nil {
			subjects[i].Skip = "failed: " + err.Error()
		}
	}
	rows, err := Compare(ctx, p.Reps, subjects, ByThroughput)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if ev, ok := evictions[rows[i].Subject]; ok {
			rows[i].Note = joinNote(rows[i].Note, "page cache emptied by "+ev)
		}
	}
	return []*Result{{Case: fmt.Sprintf("%d x %s, 1 client", n, FormatSize(p.ColdSize)), Rows: rows}}, nil
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func runHead(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	subs, cleanup, err := e.objectSubjects(ctx, "head", baseFiles, baseHTTP)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	n := 100
	key := func(i int) string { return objKey(0, i) }
	for _, s := range live(subs) {
		if err := populate(ctx, s, n, 4<<10, key); err != nil {
			s.fail(err)
		}
	}
	load := Load{Concurrency: p.HeadConcurrency, Duration: p.Duration, Warmup: p.Warmup, MinOps: p.HeadConcurrency}
	rows, err := Compare(ctx, p.Reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
		return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
			_, err := s.store.Head(ctx, s.bucket, key(seq%n))
			return 0, err
		})
	}), ByRate)
	if err != nil {
		return nil, err
	}
	return []*Result{{Case: fmt.Sprintf("4 KiB, %d clients", p.HeadConcurrency), Rows: rows}}, nil
}

func runList(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	subs, cleanup, err := e.objectSubjects(ctx, "list", baseFiles)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	n, dirs := p.ListKeys, p.ListDirs
	key := func(i int) string { return fmt.Sprintf("d%03d/k%07d", i%dirs, i) }
	e.Logf("  list: loading %d keys into each subject", n)
	for _, s := range live(subs) {
		store := s.store
		if ds, ok := store.(*DirStore); ok {
			store = &DirStore{Root: ds.Root, NoSync: true} // loading is not measured
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i := 0; i < n; i++ {
			g.Go(func() error { return store.Put(gctx, s.bucket, key(i), strings.NewReader(""), 0) })
		}
		if err := g.Wait(); err != nil {
			s.fail(fmt.Errorf("load: %w", err))
		}
	}
	type listCase struct {
		name              string
		prefix, delimiter string
		keys, prefixes    int
	}
	cases := []listCase{
		{fmt.Sprintf("%s keys, no delimiter (every page)", groupThousands(int64(n))), "", "", n, 0},
		{fmt.Sprintf("%s keys, delimiter / at the root (%d common prefixes)", groupThousands(int64(n)), dirs), "", "/", 0, dirs},
		{fmt.Sprintf("one prefix of %s keys with delimiter /", groupThousands(int64(n/dirs))), "d000/", "/", n / dirs, 0},
	}
	var out []*Result
	for _, lc := range cases {
		load := Load{Concurrency: 1, Duration: p.Duration, MinOps: 1, Warmup: 1}
		rows, err := Compare(ctx, p.Reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
			return load.Run(ctx, func(ctx context.Context, _, _ int) (int64, error) {
				lp, err := s.store.List(ctx, s.bucket, lc.prefix, lc.delimiter, 1000)
				if err == nil && (lp.Keys != lc.keys || lp.Prefixes != lc.prefixes) {
					err = fmt.Errorf("listed %d keys and %d prefixes, want %d and %d", lp.Keys, lp.Prefixes, lc.keys, lc.prefixes)
				}
				return 0, err
			})
		}), ByTime)
		if err != nil {
			return out, err
		}
		entries := float64(lc.keys + lc.prefixes)
		for i := range rows {
			if m, ok := rows[i].Primary(); ok && m.Value > 0 {
				rows[i].Metrics = append(rows[i].Metrics, Metric{Name: "entries", Unit: "per s", Value: entries / (m.Value / 1000)})
			}
			if rows[i].Subject == KindGoFakeS3 {
				rows[i].Note = "gofakes3's on-disk backend ignores max-keys and answers every key in one page"
			}
		}
		out = append(out, &Result{Case: lc.name, Rows: rows})
	}
	return out, nil
}

// deleteSubjects are the subjects of a delete workload, the files
// baseline noted with what it does.
func deleteSubjects(ctx context.Context, e *Env, name, filesNote string) ([]*objSubject, func(), error) {
	subs, cleanup, err := e.objectSubjects(ctx, name, baseFiles)
	if err != nil {
		return nil, nil, err
	}
	writeNotes(subs)
	for _, s := range subs {
		if s.name == baseFiles {
			s.note = filesNote
		}
	}
	return subs, cleanup, nil
}

func runDelete(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	subs, cleanup, err := deleteSubjects(ctx, e, "delete", "unlink, fsync the directory")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	n := p.DeleteObjects
	rows, err := Compare(ctx, p.Reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
		key := func(i int) string { return objKey(rep, i) }
		if err := populate(ctx, s, n, 4<<10, key); err != nil {
			return Sample{}, err
		}
		load := Load{Concurrency: p.HeadConcurrency, Ops: n}
		return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
			return 0, s.store.Delete(ctx, s.bucket, key(seq))
		})
	}), ByRate)
	if err != nil {
		return nil, err
	}
	return []*Result{{Case: fmt.Sprintf("%d objects of 4 KiB, %d clients", n, p.HeadConcurrency), Rows: rows}}, nil
}

// deleteBatch is how many keys one DeleteObjects of the delete-many
// workload names (warp's default).
const deleteBatch = 20

// batchDeleter is a store that deletes many keys in one call.
type batchDeleter interface {
	DeleteMany(ctx context.Context, bucket string, keys []string) error
}

// runDeleteMany times DeleteObjects of 20-key batches from several
// clients, against removing the same files and syncing their directory
// once a batch.
func runDeleteMany(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	subs, cleanup, err := deleteSubjects(ctx, e, "delete-many", "unlink 20 files, fsync their directory once")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	batches := max(p.DeleteObjects*5/deleteBatch, 2*p.HeadConcurrency)
	rows, err := Compare(ctx, p.Reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
		key := func(i int) string { return objKey(rep, i) }
		if err := populate(ctx, s, batches*deleteBatch, 4<<10, key); err != nil {
			return Sample{}, err
		}
		bd, ok := s.store.(batchDeleter)
		if !ok {
			return Sample{}, fmt.Errorf("%s deletes no batches", s.name)
		}
		load := Load{Concurrency: p.HeadConcurrency, Ops: batches}
		return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
			keys := make([]string, deleteBatch)
			for i := range keys {
				keys[i] = key(seq*deleteBatch + i)
			}
			return 0, bd.DeleteMany(ctx, s.bucket, keys)
		})
	}), ByRate)
	if err != nil {
		return nil, err
	}
	return []*Result{{Case: fmt.Sprintf("%d batches of %d objects of 4 KiB, %d clients", batches, deleteBatch, p.HeadConcurrency), Rows: rows}}, nil
}

func runMixed(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	subs, cleanup, err := e.objectSubjects(ctx, "mixed", baseFiles)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	writeNotes(subs)
	const n = 100
	size := func(i int) int64 {
		if i%2 == 1 {
			return 1 << 20
		}
		return 4 << 10
	}
	key := func(i int) string { return fmt.Sprintf("base/o%04d", i) }
	c := DefaultContent()
	for _, s := range live(subs) {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for i := 0; i < n; i++ {
			g.Go(func() error { return s.store.Put(gctx, s.bucket, key(i), c.Reader(stamp(0, i), size(i)), size(i)) })
		}
		if err := g.Wait(); err != nil {
			s.fail(fmt.Errorf("load: %w", err))
		}
	}
	conc := p.HeadConcurrency
	load := Load{Concurrency: conc, Duration: 2 * p.Duration, Warmup: p.Warmup, MinOps: 4 * conc}
	rows, err := Compare(ctx, p.Reps, toSubjects(subs, func(s *objSubject, rep int) (Sample, error) {
		// Each worker deletes only objects it created, newest first.
		created := make([][]string, conc)
		return load.Run(ctx, func(ctx context.Context, w, seq int) (int64, error) {
			i := seq % n
			switch r := seq % 20; {
			case r < 10: // 50% GET
				return s.store.Get(ctx, s.bucket, key(i))
			case r < 14: // 20% PUT of a new object
				k := fmt.Sprintf("new/r%d/o%08d", rep, seq)
				created[w] = append(created[w], k)
				return size(i), s.store.Put(ctx, s.bucket, k, c.Reader(stamp(rep+1, seq), size(i)), size(i))
			case r < 17: // 15% HEAD
				_, err := s.store.Head(ctx, s.bucket, key(i))
				return 0, err
			case r < 18: // 5% LIST of the base prefix
				_, err := s.store.List(ctx, s.bucket, "base/", "/", 1000)
				return 0, err
			default: // 10% DELETE of an object this worker created
				if len(created[w]) == 0 {
					_, err := s.store.Head(ctx, s.bucket, key(i))
					return 0, err
				}
				k := created[w][len(created[w])-1]
				created[w] = created[w][:len(created[w])-1]
				return 0, s.store.Delete(ctx, s.bucket, k)
			}
		})
	}), ByRate)
	if err != nil {
		return nil, err
	}
	return []*Result{{Case: fmt.Sprintf("%d clients, %s", conc, (2 * p.Duration).Round(time.Millisecond)), Rows: rows,
		Notes: []string{"Per 20 operations: 10 GET, 4 PUT of a new object, 3 HEAD, 1 LIST (one page of 100 keys), 2 DELETE of an object the same client created; half the objects are 4 KiB, half 1 MiB."}}}, nil
}
