// Package bench is the benchmark harness behind `nas-bench` and the
// gateway's go-test benchmarks. It runs named workloads against several
// S3 targets side by side in one invocation and reports each figure beside
// the same figure for baselines measured in the same run, with ratios,
// because absolute numbers on a shared machine are noise.
//
// Vocabulary:
//   - Target: an S3 endpoint under test. The harness starts our gateway in
//     this process on a fresh temporary data directory (KindNAS, the
//     reference every ratio is taken against), gofakes3 with its on-disk
//     backend (KindGoFakeS3), or drives any endpoint by URL and
//     credentials (KindEndpoint: MinIO, another gateway, AWS).
//   - Baseline: what the same work costs without an object store: plain
//     files in the same file system (DirStore: write + fsync, read, with a
//     cold page cache where the workload is a cold read), MD5, SHA-256 and
//     BLAKE3 throughput, and loopback HTTP to a handler that discards the
//     body (NullHandler).
//   - Workload: a named benchmark (Register, Registered). It builds
//     Subjects (targets and baselines), measures them with Compare and
//     returns Results: one Row per subject, or a Curve (scaling curves,
//     drawn as PNG by Report.WritePlots).
//   - Load: the load generator (concurrency, operation count, duration,
//     warm-up) over an Op; a run gives a Sample, repeated runs a Summary
//     (MiB/s, ops/s with the spread over runs, p50 and p99 latency).
//   - Profile: every size and count of a mode: "tiny" (the test suite),
//     "quick" (under a minute on two cores) and "full" (the record).
//   - Client: the load generator's S3 client, raw HTTP signed with the AWS
//     SDK's SigV4 signer, the same for every target.
//
// Fairness rules the workloads follow: each case starts its targets fresh;
// subjects are measured interleaved (A B C, A B C, ...) so background load
// spreads over all of them; object bodies (Content) are unique in every
// chunk, so deduplication cannot make a "new" object free; the same bytes go
// to every subject.
//
// Adding a workload from another file or package:
//
//	func init() {
//		bench.Register(bench.Workload{Name: "fuse-write", Doc: "...", Run: runFuseWrite})
//	}
//
//	func runFuseWrite(ctx context.Context, env *bench.Env) ([]*bench.Result, error) {
//		nas, err := env.StartReference(ctx) // a fresh in-process gateway
//		...
//		rows, err := bench.Compare(ctx, env.Profile.Reps, []bench.Subject{
//			{Name: "nas mount", Measure: ...},
//			{Name: "local dir", Baseline: true, Measure: ...},
//		}, bench.ByThroughput)
//		return []*bench.Result{{Case: "1 MiB files", Rows: rows}}, err
//	}
//
// The go-test benchmarks of this package (go test -bench) measure single
// paths in isolation and stay comparable with benchstat:
//
//	go test -run '^$' -bench . -benchtime 3x ./bench
package bench
