package bench

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"fmt"
	"hash"
	"runtime"
	"time"

	"github.com/zeebo/blake3"
)

// The hashing baselines: how fast this machine computes the digests a PUT
// pays for. Our gateway computes MD5 (the ETag) and BLAKE3 (chunk names)
// of every byte it stores, SHA-256 only when a client signs its payload.

func runHash(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	buf := DefaultContent().Bytes(0, p.HashBytes)
	algs := []struct {
		name string
		new  func() hash.Hash
	}{
		{"md5", md5.New},
		{"sha256", sha256.New},
		{"blake3", func() hash.Hash { return blake3.New() }},
	}
	var out []*Result
	for _, conc := range []int{1, runtime.NumCPU()} {
		var subjects []Subject
		for _, a := range algs {
			subjects = append(subjects, Subject{Name: a.name, Baseline: true, Measure: func(ctx context.Context, _ int) (Sample, error) {
				hs := make([]hash.Hash, conc)
				for i := range hs {
					hs[i] = a.new()
				}
				// Hashing is steady: half a second per run is plenty.
				load := Load{Concurrency: conc, Duration: min(p.Duration, 500*time.Millisecond), Warmup: 1}
				return load.Run(ctx, func(_ context.Context, w, _ int) (int64, error) {
					hs[w].Reset()
					hs[w].Write(buf)
					_ = hs[w].Sum(nil)
					return int64(len(buf)), nil
				})
			}})
		}
		rows, err := Compare(ctx, p.Reps, subjects, ByThroughput)
		if err != nil {
			return out, err
		}
		for i := range rows {
			rows[i].Metrics = rows[i].Metrics[:1] // per-buffer latency says nothing more
		}
		out = append(out, &Result{Case: fmt.Sprintf("%s buffers, %d goroutine%s", FormatSize(p.HashBytes), conc, plural(conc)), Rows: rows})
	}
	return out, nil
}
