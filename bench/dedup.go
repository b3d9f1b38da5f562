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

// runDedup uploads the data set twice, and a large object and an edited
// copy of it, into every local target and into plain files, and reports
// the bytes each kept.
func runDedup(ctx context.Context, e *Env) ([]*Result, error) {
	ts, err := e.StartTargets(ctx)
	if err != nil {
		return nil, err
	}
	defer ts.Close()
	stores, skipped, err := dedupStores(ctx, e, ts)
	if err != nil {
		return nil, err
	}
	w := newDedupLoad(e.Profile)
	var setRows, editRows []Row
	for _, s := range stores {
		e.Logf("  dedup: %s", s.name)
		u, err := w.measure(ctx, s)
		if err != nil {
			setRows = append(setRows, Row{Subject: s.name, Baseline: s.name == baseFiles, Skipped: "failed: " + err.Error()})
			editRows = append(editRows, Row{Subject: s.name, Baseline: s.name == baseFiles, Skipped: "failed: " + err.Error()})
			continue
		}
		setRow, editRow := w.rows(s, u)
		setRows, editRows = append(setRows, setRow), append(editRows, editRow)
	}
	return []*Result{
		{Case: fmt.Sprintf("one data set (%s in %d objects) uploaded twice", FormatSize(w.set), len(w.sizes)), Rows: append(setRows, skipped...),
			Notes: []string{"Stored = growth of the data directory's allocated size (chunks and metadata)."}},
		{Case: fmt.Sprintf("a %s object and a copy with 1%% (%s) rewritten in the middle", FormatSize(w.large), FormatSize(w.editLen)), Rows: append(editRows, skipped...),
			Notes: []string{"Both versions are kept under two keys. Content-defined chunking should store about the edited bytes plus the chunks the edit's boundaries cut (1 MiB average chunks)."}},
	}, nil
}

// dedupStores makes the buckets (or the branch) of the two copies in every
// local target, and two directories of plain files; a target whose data
// directory the harness does not own is a skipped row.
func dedupStores(ctx context.Context, e *Env, ts Targets) ([]dedupStore, []Row, error) {
	var stores []dedupStore
	var skipped []Row
	for _, t := range ts {
		if !t.Local() {
			skipped = append(skipped, Row{Subject: t.Name, Skipped: "bytes stored are read from a data directory the harness owns"})
			continue
		}
		if _, err := t.Bucket(ctx, "dedup"); err != nil {
			return nil, nil, err
		}
		ds := dedupStore{name: t.Name, store: t.Client, first: "dedup", dir: t.DataDir}
		switch t.Kind {
		case KindNAS:
			// The second copy goes to a branch forked before the first upload
			// was committed (so it starts empty), through the header-less
			// alias REPO_BRANCH.
			if _, err := t.Gateway.Branches.CreateBranch(ctx, "dedup", "copy", "main"); err != nil {
				return nil, nil, err
			}
			ds.other = "dedup_copy"
			ds.note = "second copy on branch `copy` of the same repository"
		default:
			if _, err := t.Bucket(ctx, "dedup-copy"); err != nil {
				return nil, nil, err
			}
			ds.other = "dedup-copy"
			ds.note = "second copy in a second bucket"
		}
		stores = append(stores, ds)
	}
	dir, err := e.TempDir("dedup-files")
	if err != nil {
		return nil, nil, err
	}
	files := &DirStore{Root: dir}
	for _, b := range []string{"a", "b"} {
		if err := files.CreateBucket(ctx, b); err != nil {
			return nil, nil, err
		}
	}
	stores = append(stores, dedupStore{name: baseFiles, store: files, first: "a", other: "b", dir: dir, note: "two directories of plain files"})
	return stores, skipped, nil
}

// dedupLoad is what the workload uploads: the data set's objects and a
// large object with 1% of it rewritten in the middle.
type dedupLoad struct {
	c               *Content
	sizes           []int64 // the data set's objects
	set             int64   // the data set's bytes
	large           int64
	editAt, editLen int64
}

// newDedupLoad sizes the workload from the profile.
func newDedupLoad(p Profile) *dedupLoad {
	w := &dedupLoad{c: DefaultContent(), sizes: dedupObjects(p.DedupSet), large: p.DedupLarge}
	for _, s := range w.sizes {
		w.set += s
	}
	w.editAt, w.editLen = w.large/2, w.large/100
	return w
}

// dedupUsage is the growth of a store's directory after each upload.
type dedupUsage struct {
	first, second int64 // the data set's two copies
	v1, v2        int64 // the large object and its edited copy
}

// measure uploads both copies of the data set, then the large object and
// its edited copy, into s, one after the other.
func (w *dedupLoad) measure(ctx context.Context, s dedupStore) (u dedupUsage, err error) {
	u.first, err = usageDelta(s.dir, func() error { return w.upload(ctx, s, s.first) })
	if err == nil {
		u.second, err = usageDelta(s.dir, func() error { return w.upload(ctx, s, s.other) })
	}
	if err == nil {
		u.v1, err = usageDelta(s.dir, func() error { return s.store.Put(ctx, s.first, "large", w.c.Reader(7, w.large), w.large) })
	}
	if err == nil {
		u.v2, err = usageDelta(s.dir, func() error { return s.store.Put(ctx, s.first, "large-edited", w.edited(), w.large) })
	}
	return u, err
}

// upload puts the data set into bucket of s.
func (w *dedupLoad) upload(ctx context.Context, s dedupStore, bucket string) error {
	for i, size := range w.sizes {
		if err := s.store.Put(ctx, bucket, fmt.Sprintf("set/o%05d", i), w.c.Reader(uint64(i), size), size); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// edited is the large object with its middle 1% rewritten.
func (w *dedupLoad) edited() io.Reader {
	c, large, editAt, editLen := w.c, w.large, w.editAt, w.editLen
	return io.MultiReader(c.Section(7, 0, editAt), c.Section(8, editAt, editLen), c.Section(7, editAt+editLen, large-editAt-editLen))
}

// rows are the rows of s in the two results: the data set's and the edit's.
func (w *dedupLoad) rows(s dedupStore, u dedupUsage) (set, edit Row) {
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	set = Row{Subject: s.name, Baseline: s.name == baseFiles, Note: s.note, Metrics: []Metric{
		{Name: "stored for both copies", Unit: "MiB", Value: mib(u.first + u.second), Better: Lower},
		{Name: "first copy", Unit: "MiB", Value: mib(u.first), Better: Lower},
		{Name: "second copy", Unit: "MiB", Value: mib(u.second), Better: Lower},
		{Name: "both / data set", Unit: "x", Value: float64(u.first+u.second) / float64(w.set), Better: Lower},
	}}
	edit = Row{Subject: s.name, Baseline: s.name == baseFiles, Metrics: []Metric{
		{Name: "stored for the edited copy", Unit: "MiB", Value: mib(u.v2), Better: Lower},
		{Name: "original", Unit: "MiB", Value: mib(u.v1), Better: Lower},
		{Name: "edited / object", Unit: "%", Value: 100 * float64(u.v2) / float64(w.large), Better: Lower},
	}}
	return set, edit
}
