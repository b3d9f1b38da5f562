package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The zero-copy workloads: a server-side copy of a large object and the
// completion of a multipart upload of many parts, which our gateway does
// by writing metadata only. The baselines are what moving the bytes costs
// on this disk.

// usageDelta measures how much dir grows on disk while fn runs; it
// returns -1 for targets without a local directory.
func usageDelta(dir string, fn func() error) (int64, error) {
	if dir == "" {
		return -1, fn()
	}
	before, err := DiskUsage(dir)
	if err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	after, err := DiskUsage(dir)
	if err != nil {
		return 0, err
	}
	return after - before, nil
}

// withWritten appends the median of the disk growth measured per run as a
// metric, for the subjects that have one.
func withWritten(rows []Row, written map[string][]float64) {
	for i := range rows {
		ws := written[rows[i].Subject]
		if len(rows[i].Metrics) == 0 || len(ws) == 0 || ws[0] < 0 {
			continue
		}
		st := StatOf(ws)
		rows[i].Metrics = append(rows[i].Metrics, Metric{Name: "disk growth", Unit: "MiB", Value: st.Median / (1 << 20), Better: Lower})
	}
}

// copyFile copies src to a new dst (io.Copy between files uses
// copy_file_range on Linux, so the kernel moves the bytes) and syncs it.
func copyFile(dst, src string, times int) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	for i := 0; i < times; i++ {
		if _, err := in.Seek(0, io.SeekStart); err != nil {
			out.Close()
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst))
}

// runCopy times a CopyObject of a large object on every target against
// copying the file, with the bytes each store grew by.
func runCopy(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	ts, err := e.StartTargets(ctx)
	if err != nil {
		return nil, err
	}
	defer ts.Close()
	size := p.CopySize
	c := DefaultContent()
	written := map[string][]float64{}
	var subjects []Subject
	for _, t := range ts {
		e.Logf("  copy: uploading %s to %s", FormatSize(size), t.Name)
		bucket, err := t.Bucket(ctx, "copy")
		if err == nil {
			err = t.Client.Put(ctx, bucket, "src", c.Reader(1, size), size)
		}
		if err != nil {
			subjects = append(subjects, Subject{Name: t.Name, Skip: "failed: " + err.Error()})
			continue
		}
		subjects = append(subjects, Subject{Name: t.Name, Measure: func(ctx context.Context, rep int) (Sample, error) {
			var smp Sample
			d, err := usageDelta(t.DataDir, func() (err error) {
				smp, err = Once(ctx, size, func(ctx context.Context) error {
					return t.Client.Copy(ctx, bucket, fmt.Sprintf("dst-%d", rep), bucket, "src")
				})
				return err
			})
			written[t.Name] = append(written[t.Name], float64(d))
			return smp, err
		}})
	}
	dir, err := e.TempDir("copy-files")
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "src")
	ds := &DirStore{Root: dir}
	if err := ds.Put(ctx, "", "src", c.Reader(1, size), size); err != nil {
		return nil, err
	}
	subjects = append(subjects, Subject{Name: baseFiles, Baseline: true, Note: "copy_file_range into a new file, fsync it and the directory",
		Measure: func(ctx context.Context, rep int) (Sample, error) {
			var smp Sample
			d, err := usageDelta(dir, func() (err error) {
				smp, err = Once(ctx, size, func(context.Context) error { return copyFile(filepath.Join(dir, fmt.Sprintf("dst-%d", rep)), src, 1) })
				return err
			})
			written[baseFiles] = append(written[baseFiles], float64(d))
			return smp, err
		}})
	rows, err := Compare(ctx, p.Reps, subjects, ByTime)
	if err != nil {
		return nil, err
	}
	withWritten(rows, written)
	return []*Result{{Case: FormatSize(size), Rows: rows,
		Notes: []string{"Disk growth is the data directory's allocated size after the copy minus before (metadata included)."}}}, nil
}

// runMultipart times CompleteMultipartUpload of many parts on every
// target against concatenating the part files, with the bytes each
// store grew by.
func runMultipart(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	ts, err := e.StartTargets(ctx)
	if err != nil {
		return nil, err
	}
	defer ts.Close()
	mp := &multipartRun{e: e, c: DefaultContent(), written: map[string][]float64{}}
	reps := min(p.Reps, 3) // each run uploads every part again
	var subjects []Subject
	noRatio := map[string]bool{}
	for _, t := range ts {
		bucket, err := t.Bucket(ctx, "multipart")
		if err != nil {
			subjects = append(subjects, Subject{Name: t.Name, Skip: "failed: " + err.Error()})
			continue
		}
		parts := p.Parts
		note := ""
		if t.Kind == KindGoFakeS3 && p.GoFakeS3Parts < parts {
			parts = p.GoFakeS3Parts
			note = fmt.Sprintf("%d parts, not %d: gofakes3 holds every part and then the joined object in memory", parts, p.Parts)
			noRatio[t.Name] = true
		}
		subjects = append(subjects, Subject{Name: t.Name, Note: note, Measure: mp.complete(t, bucket, parts)})
	}
	files, err := mp.files(ctx)
	if err != nil {
		return nil, err
	}
	subjects = append(subjects, files)
	rows, err := Compare(ctx, reps, subjects, ByTime)
	if err != nil {
		return nil, err
	}
	withWritten(rows, mp.written)
	for i := range rows {
		rows[i].NoRatio = noRatio[rows[i].Subject]
	}
	return []*Result{{Case: fmt.Sprintf("%s parts of %s (%s)", groupThousands(int64(p.Parts)), FormatSize(p.PartSize), FormatSize(int64(p.Parts)*p.PartSize)),
		Rows: rows, Notes: []string{"Timed: the CompleteMultipartUpload request alone; the parts are uploaded before it, untimed."}}}, nil
}

// multipartRun is the multipart workload under way: the bytes each
// subject's store grew by, run by run.
type multipartRun struct {
	e       *Env
	c       *Content
	written map[string][]float64
}

// complete measures a CompleteMultipartUpload of parts parts into bucket
// of t, the parts uploaded first, untimed.
func (mp *multipartRun) complete(t *Target, bucket string, parts int) func(ctx context.Context, rep int) (Sample, error) {
	e, p := mp.e, mp.e.Profile
	return func(ctx context.Context, rep int) (Sample, error) {
		key := fmt.Sprintf("mp-%d", rep)
		id, err := t.Client.CreateUpload(ctx, bucket, key)
		if err != nil {
			return Sample{}, err
		}
		e.Logf("  multipart: uploading %d parts to %s", parts, t.Name)
		etags := make([]string, parts)
		start := time.Now()
		for i := range etags {
			// Every part has the same content (completion never reads it),
			// so a store that deduplicates keeps one part's bytes.
			if etags[i], err = t.Client.UploadPart(ctx, bucket, key, id, i+1, mp.c.Reader(uint64(rep), p.PartSize), p.PartSize); err != nil {
				return Sample{}, err
			}
		}
		e.Logf("  multipart: parts uploaded in %s", time.Since(start).Round(time.Millisecond))
		var smp Sample
		d, err := usageDelta(t.DataDir, func() (err error) {
			smp, err = Once(ctx, int64(parts)*p.PartSize, func(ctx context.Context) error {
				return t.Client.CompleteUpload(ctx, bucket, key, id, etags)
			})
			return err
		})
		mp.written[t.Name] = append(mp.written[t.Name], float64(d))
		if err == nil {
			// Untimed: stores that do not deduplicate free the space again.
			err = t.Client.Delete(ctx, bucket, key)
		}
		return smp, err
	}
}

// files is the baseline: the parts as files, joined into a new file.
func (mp *multipartRun) files(ctx context.Context) (Subject, error) {
	p := mp.e.Profile
	dir, err := mp.e.TempDir("multipart-files")
	if err != nil {
		return Subject{}, err
	}
	part := filepath.Join(dir, "part")
	ds := &DirStore{Root: dir}
	if err := ds.Put(ctx, "", "part", mp.c.Reader(0, p.PartSize), p.PartSize); err != nil {
		return Subject{}, err
	}
	return Subject{Name: baseFiles, Baseline: true,
		Note: fmt.Sprintf("concatenate %d part files into a new file (copy_file_range), fsync it and the directory", p.Parts),
		Measure: func(ctx context.Context, rep int) (Sample, error) {
			// The previous run's file goes first, so runs do not fill the disk.
			if err := os.Remove(filepath.Join(dir, fmt.Sprintf("joined-%d", rep-1))); err != nil && !os.IsNotExist(err) {
				return Sample{}, err
			}
			var smp Sample
			d, err := usageDelta(dir, func() (err error) {
				dst := filepath.Join(dir, fmt.Sprintf("joined-%d", rep))
				smp, err = Once(ctx, int64(p.Parts)*p.PartSize, func(context.Context) error { return copyFile(dst, part, p.Parts) })
				return err
			})
			mp.written[baseFiles] = append(mp.written[baseFiles], float64(d))
			return smp, err
		}}, nil
}
