package gitexport

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentnas/nas/branch"
	"github.com/agentnas/nas/manifest"
)

// TestMeasureExportImport measures export and import of 10,000 objects
// over 5 commits (set NAS_EXPORT_MEASURE=1; it prints the numbers).
func TestMeasureExportImport(t *testing.T) {
	if os.Getenv("NAS_EXPORT_MEASURE") == "" {
		t.Skip("set NAS_EXPORT_MEASURE=1 to measure")
	}
	ctx := context.Background()
	src, dst := newService(t), newService(t)
	if _, err := src.CreateRepo(ctx, "meas", branch.CreateRepoOptions{}); err != nil {
		t.Fatal(err)
	}
	const n, commits = 10000, 5 // 4 KiB objects
	body := make([]byte, 4096)
	start := time.Now()
	for c := 0; c < commits; c++ {
		from, to := 0, n
		if c > 0 {
			from, to = (c-1)*n/5, c*n/5 // 2,000 changes per later commit
		}
		for i := from; i < to; i++ {
			copy(body, fmt.Sprintf("commit %d object %d", c, i))
			putBytes(t, src, "meas", "main", fmt.Sprintf("d%02d/s%02d/o%06d", i%50, i%7, i), body, manifest.Entry{})
		}
		commit(t, src, "meas", "main", fmt.Sprintf("c%d", c))
	}
	t.Logf("seeded %d objects of %d bytes over %d commits in %s", n, len(body), commits, time.Since(start))
	dir := filepath.Join(t.TempDir(), "meas.git")
	start = time.Now()
	rep := exportTo(t, src, "meas", dir)
	exp := time.Since(start)
	var size int64
	var files int
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, _ error) error {
		if fi, err := d.Info(); err == nil && !d.IsDir() {
			size += fi.Size()
			files++
		}
		return nil
	})
	t.Logf("export: %s, %d commits, %d changed keys, %d object bytes; Git repository %d files, %.1f MiB", exp, rep.Commits, rep.Entries, rep.Bytes, files, float64(size)/(1<<20))
	start = time.Now()
	pr, pw := io.Pipe()
	go func() { _, err := ReadGit(ctx, dir, pw); pw.CloseWithError(err) }()
	irep, err := Load(ctx, dst, "meas", pr)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("import: %s, %d commits, %d changed keys, %d bytes", time.Since(start), irep.Commits, irep.Entries, irep.Bytes)
}
