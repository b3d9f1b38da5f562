package bench

import (
	"context"
	"fmt"
	"io"
)

// The deduplication workload: the bytes a store keeps after the same data
// set was uploaded to two branches (two buckets where a store has no
// branches), and after an edited copy of a large object (1% of it
// rewritten in place) was uploaded beside the original. Bytes are the
// allocated size of the store's data directory, so only stores the harness
// started are measured.

// dedupObjects splits a data set into 4 MiB objects (three quarters of the
// bytes) and 64 KiB objects.
func dedupObjects(total int64) []int64 {
	var sizes []int64
	big := total * 3 / 4
	for ; big >= 4<<20; big -= 4 << 20 {
		sizes = append(sizes, 4<<20)
	}
	for small := total - int64(len(sizes))*(4<<20); small >= 64<<10; small -= 64 << 10 {
		sizes = append(sizes, 64<<10)
	}
	return sizes
}

// dedupStore is one subject: where to upload the two copies and the
// directory whose growth counts.
type dedupStore struct {
	name  string
	store ObjectStore
	first string // bucket of the first upload
	other string // bucket (or branch alias) of the second
	dir   string
	note  string
}

func runDedup(ctx context.Context, e *Env) ([]*Result, error) {
	p := e.Profile
	ts, err := e.StartTargets(ctx)
	if err != nil {
		return nil, err
	}
	defer ts.Close()
	var stores []dedupStore
	var skipped []Row
	for _, t := range ts {
		if !t.Local() {
			skipped = append(skipped, Row{Subject: t.Name, Skipped: "bytes stored are read from a data directory the harness owns"})
			continue
		}
		if _, err := t.Bucket(ctx, "dedup"); err != nil {
			return nil, err
		}
		ds := dedupStore{name: t.Name, store: t.Client, first: "dedup", dir: t.DataDir}
		switch t.Kind {
		case KindNAS:
			// The second copy goes to a branch forked before the first upload
			// was committed (so it starts empty), through the header-less
			// alias REPO_BRANCH.
			if _, err := t.Gateway.Branches.CreateBranch(ctx, "dedup", "copy", "main"); err != nil {
				return nil, err
			}
			ds.other = "dedup_copy"
			ds.note = "second copy on branch `copy` of the same repository"
		default:
			if _, err := t.Bucket(ctx, "dedup-copy"); err != nil {
				return nil, err
			}
			ds.other = "dedup-copy"
			ds.note = "second copy in a second bucket"
		}
		stores = append(stores, ds)
	}
	dir, err := e.TempDir("dedup-files")
	if err != nil {
		return nil, err
	}
	files := &DirStore{Root: dir}
	for _, b := range []string{"a", "b"} {
		if err := files.CreateBucket(ctx, b); err != nil {
			return nil, err
		}
	}
	stores = append(stores, dedupStore{name: baseFiles, store: files, first: "a", other: "b", dir: dir, note: "two directories of plain files"})

	c := DefaultContent()
	sizes := dedupObjects(p.DedupSet)
	var set int64
	for _, s := range sizes {
		set += s
	}
	upload := func(s dedupStore, bucket string) error {
		for i, size := range sizes {
			if err := s.store.Put(ctx, bucket, fmt.Sprintf("set/o%05d", i), c.Reader(uint64(i), size), size); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
		return nil
	}
	large := p.DedupLarge
	editAt, editLen := large/2, large/100
	edited := func() io.Reader {
		return io.MultiReader(c.Section(7, 0, editAt), c.Section(8, editAt, editLen), c.Section(7, editAt+editLen, large-editAt-editLen))
	}
	var setRows, editRows []Row
	for _, s := range stores {
		e.Logf("  dedup: %s", s.name)
		var first, second, v1, v2 int64
		first, err = usageDelta(s.dir, func() error { return upload(s, s.first) })
		if err == nil {
			second, err = usageDelta(s.dir, func() error { return upload(s, s.other) })
		}
		if err == nil {
			v1, err = usageDelta(s.dir, func() error { return s.store.Put(ctx, s.first, "large", c.Reader(7, large), large) })
		}
		if err == nil {
			v2, err = usageDelta(s.dir, func() error { return s.store.Put(ctx, s.first, "large-edited", edited(), large) })
		}
		if err != nil {
			setRows = append(setRows, Row{Subject: s.name, Baseline: s.name == baseFiles, Skipped: "failed: " + err.Error()})
			editRows = append(editRows, Row{Subject: s.name, Baseline: s.name == baseFiles, Skipped: "failed: " + err.Error()})
			continue
		}
		mib := func(v int64) float64 { return float64(v) / (1 << 20) }
		setRows = append(setRows, Row{Subject: s.name, Baseline: s.name == baseFiles, Note: s.note, Metrics: []Metric{
			{Name: "stored for both copies", Unit: "MiB", Value: mib(first + second), Better: Lower},
			{Name: "first copy", Unit: "MiB", Value: mib(first), Better: Lower},
			{Name: "second copy", Unit: "MiB", Value: mib(second), Better: Lower},
			{Name: "both / data set", Unit: "x", Value: float64(first+second) / float64(set), Better: Lower},
		}})
		editRows = append(editRows, Row{Subject: s.name, Baseline: s.name == baseFiles, Metrics: []Metric{
			{Name: "stored for the edited copy", Unit: "MiB", Value: mib(v2), Better: Lower},
			{Name: "original", Unit: "MiB", Value: mib(v1), Better: Lower},
			{Name: "edited / object", Unit: "%", Value: 100 * float64(v2) / float64(large), Better: Lower},
		}})
	}
	return []*Result{
		{Case: fmt.Sprintf("one data set (%s in %d objects) uploaded twice", FormatSize(set), len(sizes)), Rows: append(setRows, skipped...),
			Notes: []string{"Stored = growth of the data directory's allocated size (chunks and metadata)."}},
		{Case: fmt.Sprintf("a %s object and a copy with 1%% (%s) rewritten in the middle", FormatSize(large), FormatSize(editLen)), Rows: append(editRows, skipped...),
			Notes: []string{"Both versions are kept under two keys. Content-defined chunking should store about the edited bytes plus the chunks the edit's boundaries cut (1 MiB average chunks)."}},
	}, nil
}
