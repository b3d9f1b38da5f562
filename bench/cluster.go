package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentnas/nas/apiv1"
	"github.com/agentnas/nas/gateway"
	"github.com/agentnas/nas/kv/pgkv"
)

// The cluster workload: the embedded gateway (Badger) against gateways on
// one PostgreSQL database, one and three of them (requests in turn), for
// small and large PUT and GET, fork and commit. NAS_BENCH_POSTGRES names
// the server (a postgres:// URL whose user may create databases; run it
// with fsync on, as Badger syncs); without it the workload is skipped.

func init() {
	register(Workload{Name: "cluster", Doc: "PUT/GET 4 KiB and 1 MiB, fork and commit: the embedded gateway against 1 and 3 gateways on one PostgreSQL", Run: runCluster}, true)
}

// PostgresEnv names the PostgreSQL server the cluster workload creates
// its databases on (a postgres:// URL); unset, the workload is skipped.
const PostgresEnv = "NAS_BENCH_POSTGRES"

// clusterSubject is one side of the cluster workload: its gateways (the
// load goes to them in turn) and its bucket.
type clusterSubject struct {
	name    string
	targets Targets
	bucket  string
}

// next is the gateway of operation seq.
func (s *clusterSubject) next(seq int) *Target { return s.targets[seq%len(s.targets)] }

func runCluster(ctx context.Context, e *Env) ([]*Result, error) {
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		return []*Result{{Case: "all", Notes: []string{"skipped: set " + PostgresEnv + " to a PostgreSQL server's URL (contrib/cluster/run.sh starts one)"}}}, nil
	}
	subs, err := clusterSubjects(ctx, e, dsn)
	defer func() {
		for _, s := range subs {
			_ = s.targets.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	var out []*Result
	for _, size := range []int64{4 << 10, 1 << 20} {
		rs, err := clusterObjects(ctx, e, subs, size)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	rs, err := clusterBranches(ctx, e, subs)
	if err != nil {
		return nil, err
	}
	return append(out, rs...), nil
}

// clusterSubjects starts the embedded gateway and the two clusters.
func clusterSubjects(ctx context.Context, e *Env, dsn string) ([]*clusterSubject, error) {
	ref, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	subs := []*clusterSubject{{name: "nas (Badger)", targets: Targets{ref}}}
	for _, n := range []int{1, 3} {
		ts, err := startPostgresGateways(ctx, e, dsn, n)
		subs = append(subs, &clusterSubject{name: fmt.Sprintf("nas on PostgreSQL, %d gateway%s", n, plural(n)), targets: ts})
		if err != nil {
			return subs, err
		}
	}
	for i, s := range subs {
		if s.bucket, err = s.targets[0].Bucket(ctx, fmt.Sprintf("cluster%d", i)); err != nil {
			return subs, err
		}
	}
	return subs, nil
}

// startPostgresGateways starts n gateways on a new database and one chunk
// directory.
func startPostgresGateways(ctx context.Context, e *Env, server string, n int) (Targets, error) {
	dsn, err := pgkv.CreateDatabase(ctx, server, fmt.Sprintf("nasbench_%d_%d_%d", os.Getpid(), time.Now().Unix(), n))
	if err != nil {
		return nil, err
	}
	chunks, err := e.TempDir(fmt.Sprintf("cluster-%d-chunks", n))
	if err != nil {
		return nil, err
	}
	var ts Targets
	for i := range n {
		dir, err := e.TempDir(fmt.Sprintf("cluster-%d-gw%d", n, i))
		if err != nil {
			return ts, err
		}
		t, err := startGatewayWith(ctx, fmt.Sprintf("pg%d-%d", n, i), gateway.Config{DataDir: dir, Meta: dsn,
			ChunksDir: filepath.Join(chunks, "segments"), Log: e.Log})
		if err != nil {
			return ts, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// clusterObjects measures PUT and GET of size at 8 clients on every
// subject.
func clusterObjects(ctx context.Context, e *Env, subs []*clusterSubject, size int64) ([]*Result, error) {
	p := e.Profile
	const conc = 8
	c := DefaultContent()
	load := Load{Concurrency: conc, Duration: p.Duration, Warmup: p.Warmup, MinOps: conc}
	if ops := int(p.RunBytes / size); ops > 0 {
		load.Ops = max(ops, conc)
	}
	put := func(s *clusterSubject, rep int) (Sample, error) {
		return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
			key := fmt.Sprintf("put-%d/%d/%07d", size, rep, seq)
			return size, s.next(seq).Client.Put(ctx, s.bucket, key, c.Reader(stamp(1<<20, seq), size), size)
		})
	}
	const keys = 64
	for _, s := range subs {
		for i := range keys {
			if err := s.next(i).Client.Put(ctx, s.bucket, fmt.Sprintf("get-%d/%03d", size, i), c.Reader(stamp(1<<20, i), size), size); err != nil {
				return nil, fmt.Errorf("populate %s: %w", s.name, err)
			}
		}
	}
	get := func(s *clusterSubject, _ int) (Sample, error) {
		return load.Run(ctx, func(ctx context.Context, _, seq int) (int64, error) {
			return s.next(seq).Client.Get(ctx, s.bucket, fmt.Sprintf("get-%d/%03d", size, seq%keys))
		})
	}
	var out []*Result
	for _, m := range []struct {
		op      string
		measure func(*clusterSubject, int) (Sample, error)
	}{{"PUT", put}, {"GET", get}} {
		rows, err := Compare(ctx, p.Reps, clusterCompared(subs, m.measure), ByRate)
		if err != nil {
			return nil, err
		}
		out = append(out, &Result{Case: fmt.Sprintf("%s %s, %d clients", m.op, FormatSize(size), conc), Reference: subs[0].name, Rows: rows})
	}
	return out, nil
}

// clusterBranches measures a fork and a commit of 100 staged 4 KiB
// objects, one at a time, on every subject (each fork and commit on the
// next gateway).
func clusterBranches(ctx context.Context, e *Env, subs []*clusterSubject) ([]*Result, error) {
	p := e.Profile
	reps := max(p.Reps, 3)
	fork := func(s *clusterSubject, rep int) (Sample, error) {
		return Once(ctx, 0, func(ctx context.Context) error {
			return s.next(rep).API.Do(ctx, apiv1.BranchCreateRequest{Repo: s.bucket, Name: fmt.Sprintf("fork-%d", rep), From: "main"}, nil)
		})
	}
	c := DefaultContent()
	commit := func(s *clusterSubject, rep int) (Sample, error) {
		for i := range 100 {
			key := fmt.Sprintf("commit/%d/%03d", rep, i)
			if err := s.next(i).Client.Put(ctx, s.bucket, key, c.Reader(stamp(1<<20, i), 4<<10), 4<<10); err != nil {
				return Sample{}, err
			}
		}
		return Once(ctx, 0, func(ctx context.Context) error {
			return s.next(rep).API.Do(ctx, apiv1.CommitCreateRequest{Repo: s.bucket, Branch: "main", Message: "bench"}, nil)
		})
	}
	var out []*Result
	for _, m := range []struct {
		name    string
		measure func(*clusterSubject, int) (Sample, error)
	}{{"fork (branch/create)", fork}, {"commit of 100 staged 4 KiB objects", commit}} {
		rows, err := Compare(ctx, reps, clusterCompared(subs, m.measure), ByTime)
		if err != nil {
			return nil, err
		}
		out = append(out, &Result{Case: m.name, Reference: subs[0].name, Rows: rows})
	}
	return out, nil
}

// clusterCompared turns the subjects into Compare's, measured by m.
func clusterCompared(subs []*clusterSubject, m func(*clusterSubject, int) (Sample, error)) []Subject {
	out := make([]Subject, len(subs))
	for i, s := range subs {
		out[i] = Subject{Name: s.name, Measure: func(_ context.Context, rep int) (Sample, error) { return m(s, rep) }}
	}
	return out
}
