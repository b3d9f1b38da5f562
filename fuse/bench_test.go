package fuse_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The mount's per-file costs, for profiling (go test -bench -cpuprofile);
// the side-by-side numbers are `nas bench --workloads mount-small`.
func BenchmarkSmallFiles(b *testing.B) {
	for _, wb := range []bool{false, true} {
		b.Run(fmt.Sprintf("writeback=%v", wb), func(b *testing.B) {
			e := newEnv(b)
			e.fork(b, "dev", "main")
			mnt, _ := e.mount(b, mountOpts{writeback: wb})
			dir := filepath.Join(mnt, "d")
			must(b, os.Mkdir(dir, 0o755))
			data := pattern(1, 4096)
			b.Run("create", func(b *testing.B) {
				for i := range b.N {
					writeFile(b, filepath.Join(dir, fmt.Sprintf("f%07d", i)), data)
				}
				root, err := os.Open(mnt)
				must(b, err)
				must(b, root.Sync())
				root.Close()
			})
			b.Run("read", func(b *testing.B) {
				for i := range b.N {
					p := filepath.Join(dir, fmt.Sprintf("f%07d", i))
					if _, err := os.Stat(p); err != nil {
						writeFile(b, p, data)
					}
					readFile(b, p)
				}
			})
		})
	}
}

// BenchmarkStatTree: stat every file of a tree of 20 directories of 100
// files once the attribute TTL has passed (what git status does first).
func BenchmarkStatTree(b *testing.B) {
	e := newEnv(b)
	e.fork(b, "dev", "main")
	mnt, _ := e.mount(b, mountOpts{})
	var paths []string
	for d := range 20 {
		dir := filepath.Join(mnt, fmt.Sprintf("pkg%02d", d))
		must(b, os.Mkdir(dir, 0o755))
		for f := range 100 {
			p := filepath.Join(dir, fmt.Sprintf("f%03d.go", f))
			writeFile(b, p, []byte(p))
			paths = append(paths, p)
		}
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		time.Sleep(250 * time.Millisecond) // past the test mounts' 200 ms TTL
		b.StartTimer()
		for _, p := range paths {
			if _, err := os.Lstat(p); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(paths)), "µs/stat")
}

// BenchmarkSeqWrite: one 256 MiB file written in 1 MiB writes and closed
// (streamed to the gateway while it is written).
func BenchmarkSeqWrite(b *testing.B) {
	e := newEnv(b)
	e.fork(b, "dev", "main")
	mnt, _ := e.mount(b, mountOpts{})
	buf := pattern(5, 1<<20)
	const size = 256 << 20
	b.SetBytes(size)
	b.ResetTimer()
	for i := range b.N {
		f, err := os.Create(filepath.Join(mnt, fmt.Sprintf("seq%d", i)))
		must(b, err)
		for off := 0; off < size; off += len(buf) {
			buf[0] = byte(off >> 20) // no two MiB alike
			buf[1] = byte(i)
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		must(b, f.Close())
	}
}
