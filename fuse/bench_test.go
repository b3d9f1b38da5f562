package fuse_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
