package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentnas/nas/apiv1"
	nasclient "github.com/agentnas/nas/client"
	"github.com/agentnas/nas/fuse"
)

// The FUSE workloads: the same file-system work through `nas mount` of a
// branch of the in-process gateway and in a local directory on the same
// disk, side by side in one run. The mount is the owner's; a lease's mount
// adds one authorization call to the gateway per read.

// init registers the FUSE workloads.
func init() {
	Register(Workload{Name: "mount-seq", Doc: "FUSE: sequential write and read of one large file vs a local directory", Run: runMountSeq})
	Register(Workload{Name: "mount-small", Doc: "FUSE: create, read, stat and delete many 4 KiB files vs a local directory", Run: runMountSmall})
	Register(Workload{Name: "mount-ls", Doc: "FUSE: ls -l of a directory of many entries vs a local directory", Run: runMountLs})
	Register(Workload{Name: "mount-git", Doc: "FUSE: git status in a tree of many files vs a local directory", Run: runMountGit})
}

// mountSizes are the sizes of the FUSE workloads in each mode.
type mountSizes struct {
	seq   int64 // bytes of the sequential file
	small int   // 4 KiB files
	ls    int   // entries listed
	git   int   // files in the git tree
}

// sizesFor returns the sizes of the FUSE workloads in mode.
func sizesFor(mode string) mountSizes {
	switch mode {
	case "tiny":
		return mountSizes{seq: 8 << 20, small: 50, ls: 300, git: 100}
	case "quick":
		return mountSizes{seq: 256 << 20, small: 300, ls: 10000, git: 1000}
	}
	return mountSizes{seq: 1 << 30, small: 10000, ls: 100000, git: 10000}
}

// juiceFSMark is the mark to beat on this machine (issue 5), for the notes.
const juiceFSMark = "JuiceFS v1.4.1 (badger metadata) on this machine in issue 5, for reference (measure it in the same run with --mount-peer juicefs=DIR): " +
	"~350-500 MiB/s sequential write, ~900-1000 MiB/s read, ~1,960 creates/s and ~2,600 reads/s of 4 KiB files."

// canMount says why this machine cannot mount ("" when it can).
func canMount() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse"
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return "not root and no fusermount3"
		}
	}
	return ""
}

// mounted is a branch of a fresh gateway mounted for a workload.
type mounted struct {
	t     *Target
	m     *fuse.Mount
	dir   string
	cache string
	repo  string
	extra []*fuse.Mount // more mounts of the same branch
}

// mountFresh starts a fresh reference gateway, makes repository repo
// (filled by fill, if set, before mounting) and mounts its main branch.
func mountFresh(ctx context.Context, e *Env, repo string, fill func(*Target) error, c *nasclient.Client) (*mounted, error) {
	t, err := e.StartReference(ctx)
	if err != nil {
		return nil, err
	}
	mt := &mounted{t: t, repo: repo}
	fail := func(err error) (*mounted, error) {
		mt.close()
		return nil, err
	}
	if fill != nil {
		if err := fill(t); err != nil {
			return fail(err)
		}
	} else if err := t.API.Do(ctx, apiv1.RepoCreateRequest{Repo: repo, Protected: new(bool)}, nil); err != nil {
		return fail(err)
	}
	if mt.dir, err = e.TempDir("mnt"); err != nil {
		return fail(err)
	}
	if mt.cache, err = e.TempDir("chunk-cache"); err != nil {
		return fail(err)
	}
	if c == nil {
		c = nasclient.New(nasclient.Config{Endpoint: t.Endpoint, Credentials: t.Creds})
	}
	mt.m, err = fuse.New(ctx, mt.dir, fuse.Options{Client: c, Repo: repo, Branch: "main", CacheDir: mt.cache,
		CommitAfter: -1, Stream: true, Log: e.Log})
	if err != nil {
		return fail(err)
	}
	return mt, nil
}

// again mounts the same branch a second time, with write-back when asked;
// it is unmounted by close.
func (mt *mounted) again(ctx context.Context, e *Env, writeback bool) (string, error) {
	dir, err := e.TempDir("mnt")
	if err != nil {
		return "", err
	}
	c := nasclient.New(nasclient.Config{Endpoint: mt.t.Endpoint, Credentials: mt.t.Creds})
	m, err := fuse.New(ctx, dir, fuse.Options{Client: c, Repo: mt.repo, Branch: "main", CacheDir: mt.cache,
		CommitAfter: -1, Stream: true, Writeback: writeback, Log: e.Log})
	if err != nil {
		return "", err
	}
	mt.extra = append(mt.extra, m)
	return dir, nil
}

// close unmounts every mount of mt and stops and removes its gateway.
func (mt *mounted) close() {
	for _, m := range mt.extra {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		m.Unmount(ctx)
		cancel()
	}
	if mt.m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		mt.m.Unmount(ctx)
		cancel()
	}
	if mt.t != nil {
		mt.t.Close()
		os.RemoveAll(mt.t.DataDir)
	}
}

// writeFile writes size bytes of content stamp to p in 1 MiB writes, with
// an fsync before close when sync is set.
func writeFile(p string, c *Content, stamp uint64, size int64, sync bool) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	buf := ioBuf.Get().(*[]byte)
	defer ioBuf.Put(buf)
	r := c.Reader(stamp, size)
	if _, err := io.CopyBuffer(onlyWriter{f}, r, *buf); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// readFile reads p whole and returns its size.
func readFile(p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := ioBuf.Get().(*[]byte)
	defer ioBuf.Put(buf)
	return io.CopyBuffer(io.Discard, onlyReader{f}, *buf)
}

// ioBuf holds the 1 MiB buffers of writeFile and readFile: allocating
// one per file made the load generator, not the subjects, the larger
// part of the small-file workloads' garbage (the gateway and the mount
// share this process and its collector).
var ioBuf = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// mountIfCan mounts repo of a fresh gateway (filled by fill, if set)
// unless this machine cannot mount; skip then says why and mt is nil.
// The caller closes mt.
func mountIfCan(ctx context.Context, e *Env, repo string, fill func(*Target) error) (mt *mounted, skip string, err error) {
	if skip = canMount(); skip != "" {
		return nil, skip, nil
	}
	mt, err = mountFresh(ctx, e, repo, fill, nil)
	return mt, "", err
}

// runMountSeq writes one large file and reads it back, cold and from the
// chunk cache, through the mount and in a local directory.
func runMountSeq(ctx context.Context, e *Env) ([]*Result, error) {
	sz := sizesFor(e.Profile.Mode)
	name := fmt.Sprintf("%d MiB", sz.seq>>20)
	mt, skip, err := mountIfCan(ctx, e, "seq", nil)
	if err != nil {
		return nil, err
	}
	if mt != nil {
		defer mt.close()
	}
	local, err := e.TempDir("local-seq")
	if err != nil {
		return nil, err
	}
	f := &seqFiles{e: e, mt: mt, local: local, size: sz.seq, content: DefaultContent()}
	peers, err := f.peerDirs()
	if err != nil {
		return nil, err
	}
	write := []Subject{{Name: "nas mount", Skip: skip, Note: "write, fsync (the gateway has it), close", Measure: f.write(f.mountPath, true)}}
	cold := []Subject{{Name: "nas mount", Skip: skip, Note: "empty chunk cache, the mount's pages and the gateway's data out of the page cache", Measure: f.readMount(true)}}
	warm := []Subject{{Name: "nas mount", Skip: skip, Note: "after a first read: the kernel keeps its pages across opens while the file's version is unchanged (an owner's mount; a lease's reads come from the chunk cache)", Measure: f.readMount(false)}}
	for i, p := range e.MountPeers {
		path := func(rep int) string { return filepath.Join(peers[i], fmt.Sprintf("seq-%d", rep)) }
		write = append(write, Subject{Name: p.Name, Note: "write, fsync, close", Measure: f.write(path, true)})
		cold = append(cold, Subject{Name: p.Name, Note: "out of the kernel's page cache (its own local cache, if it keeps one, is not emptied)", Measure: f.readPeer(peers[i], true)})
		warm = append(warm, Subject{Name: p.Name, Note: "as it comes, after a first read", Measure: f.readPeer(peers[i], false)})
	}
	wrows, err := Compare(ctx, e.Profile.Reps, append(write,
		Subject{Name: "local dir", Baseline: true, Note: "write, fsync, close", Measure: f.write(f.localPath, true)}), ByThroughput)
	if err != nil {
		return nil, err
	}
	coldRows, err := Compare(ctx, e.Profile.Reps, append(cold,
		Subject{Name: "local dir", Baseline: true, Note: "out of the page cache", Measure: f.readLocal(true)}), ByThroughput)
	if err != nil {
		return nil, err
	}
	warmRows, err := Compare(ctx, e.Profile.Reps, append(warm,
		Subject{Name: "local dir", Baseline: true, Note: "in the page cache", Measure: f.readLocal(false)}), ByThroughput)
	if err != nil {
		return nil, err
	}
	out := []*Result{
		{Case: "write " + name, Reference: "nas mount", Rows: wrows, Notes: []string{juiceFSMark}},
		{Case: "read " + name + ", cold", Reference: "nas mount", Rows: coldRows},
		{Case: "read " + name + ", again", Reference: "nas mount", Rows: warmRows},
	}
	return append(out, phaseBars("mount-seq", name+": write, cold read, read again", []string{"write", "read cold", "read again"}, out)), nil
}

// seqFiles are the files of mount-seq, one a run, in the mount and in a
// local directory; each read reads run 0's.
type seqFiles struct {
	e       *Env
	mt      *mounted // nil when the machine cannot mount
	local   string
	size    int64
	content *Content
}

// mountPath is the mount's file of run rep.
func (f *seqFiles) mountPath(rep int) string {
	return filepath.Join(f.mt.dir, fmt.Sprintf("seq-%d", rep))
}

// localPath is the local directory's file of run rep.
func (f *seqFiles) localPath(rep int) string {
	return filepath.Join(f.local, fmt.Sprintf("seq-%d", rep))
}

// write measures writing the file of each run at path, with an fsync
// before close when sync is set.
func (f *seqFiles) write(path func(rep int) string, sync bool) func(ctx context.Context, rep int) (Sample, error) {
	return func(ctx context.Context, rep int) (Sample, error) {
		return Once(ctx, f.size, func(context.Context) error { return writeFile(path(rep), f.content, uint64(rep), f.size, sync) })
	}
}

// cold leaves nothing of the file local: an empty chunk cache, the
// gateway's files out of the page cache.
func (f *seqFiles) cold() error {
	if f.mt == nil {
		return nil
	}
	// The kernel keeps an owner's pages across opens of an unchanged
	// file: they go first (an open for writing drops them).
	if _, err := EvictDir(f.mt.dir, false); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(f.mt.cache, "chunks")); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(f.mt.cache, "chunks"), 0o700); err != nil {
		return err
	}
	_, err := EvictDir(f.mt.t.DataDir, f.e.DropCaches)
	return err
}

// readMount measures reading the file through the mount, cold when evict
// is set.
func (f *seqFiles) readMount(evict bool) func(ctx context.Context, rep int) (Sample, error) {
	return func(ctx context.Context, rep int) (Sample, error) {
		if evict {
			if err := f.cold(); err != nil {
				return Sample{}, err
			}
		}
		return Once(ctx, f.size, func(context.Context) error {
			n, err := readFile(f.mountPath(0))
			if err == nil && n != f.size {
				err = fmt.Errorf("read %d bytes of %d", n, f.size)
			}
			return err
		})
	}
}

// peerDirs makes each peer's directory of the workload.
func (f *seqFiles) peerDirs() ([]string, error) {
	var out []string
	for _, p := range f.e.MountPeers {
		d, err := f.e.PeerDir(p, "seq")
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// readPeer measures reading a peer's file of run 0 in dir, out of the
// kernel's page cache when evict is set.
func (f *seqFiles) readPeer(dir string, evict bool) func(ctx context.Context, rep int) (Sample, error) {
	return func(ctx context.Context, rep int) (Sample, error) {
		if evict {
			if _, err := EvictDir(dir, f.e.DropCaches); err != nil {
				return Sample{}, err
			}
		}
		return Once(ctx, f.size, func(context.Context) error {
			n, err := readFile(filepath.Join(dir, "seq-0"))
			if err == nil && n != f.size {
				err = fmt.Errorf("read %d bytes of %d", n, f.size)
			}
			return err
		})
	}
}

// readLocal measures reading the local file, out of the page cache when
// evict is set.
func (f *seqFiles) readLocal(evict bool) func(ctx context.Context, rep int) (Sample, error) {
	return func(ctx context.Context, rep int) (Sample, error) {
		if evict {
			if _, err := EvictDir(f.local, f.e.DropCaches); err != nil {
				return Sample{}, err
			}
		}
		return Once(ctx, f.size, func(context.Context) error { _, err := readFile(f.localPath(0)); return err })
	}
}

// smallPhase runs one phase of mount-small over n files, one at a time
// (as a shell loop or an untar does).
func smallPhase(ctx context.Context, n int, fn func(i int) error) (Sample, error) {
	s := Sample{Ops: n, Bytes: int64(n) * 4096, Latency: make([]time.Duration, 0, n)}
	begin := time.Now()
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return Sample{}, err
		}
		t0 := time.Now()
		if err := fn(i); err != nil {
			return Sample{}, err
		}
		s.Latency = append(s.Latency, time.Since(t0))
	}
	s.Elapsed = time.Since(begin)
	return s, nil
}

// runMountSmall creates, reads, stats and deletes many 4 KiB files one
// at a time (JuiceFS's small-file workload), through the mount (with and without write-back) and in a local
// directory (with and without fsync).
func runMountSmall(ctx context.Context, e *Env) ([]*Result, error) {
	sz := sizesFor(e.Profile.Mode)
	mt, skip, err := mountIfCan(ctx, e, "small", nil)
	if err != nil {
		return nil, err
	}
	if mt != nil {
		defer mt.close()
	}
	local, err := e.TempDir("local-small")
	if err != nil {
		return nil, err
	}
	content := DefaultContent()
	trees, err := smallTrees(ctx, e, mt, skip, local)
	if err != nil {
		return nil, err
	}
	b := &smallBench{e: e, trees: trees, n: sz.small}
	created, err := b.phase(ctx, "create", func(t smallTree, rep int) func(int) error {
		return func(i int) error { return writeFile(t.file(rep, i), content, uint64(rep<<32|i), 4096, t.sync) }
	})
	if err != nil {
		return nil, err
	}
	read, err := b.phase(ctx, "read", func(t smallTree, rep int) func(int) error {
		return func(i int) error {
			n, err := readFile(t.file(rep, i))
			if err == nil && n != 4096 {
				err = fmt.Errorf("read %d bytes of 4096", n)
			}
			return err
		}
	})
	if err != nil {
		return nil, err
	}
	stated, err := b.phase(ctx, "stat", func(t smallTree, rep int) func(int) error {
		return func(i int) error {
			fi, err := os.Stat(t.file(rep, i))
			if err == nil && fi.Size() != 4096 {
				err = fmt.Errorf("stat says %d bytes, not 4096", fi.Size())
			}
			return err
		}
	})
	if err != nil {
		return nil, err
	}
	deleted, err := b.phase(ctx, "delete", func(t smallTree, rep int) func(int) error {
		return func(i int) error { return os.Remove(t.file(rep, i)) }
	})
	if err != nil {
		return nil, err
	}
	n := fmt.Sprintf("%d files of 4 KiB", sz.small)
	out := []*Result{
		{Case: "create " + n, Reference: "nas mount", Rows: created, Notes: []string{juiceFSMark}},
		{Case: "read " + n, Reference: "nas mount", Rows: read},
		{Case: "stat " + n, Reference: "nas mount", Rows: stated},
		{Case: "delete " + n, Reference: "nas mount", Rows: deleted},
	}
	return append(out, phaseBars("mount-small", n+": create, read, stat, delete", []string{"create", "read", "stat", "delete"}, out)), nil
}

// smallTree is one subject of mount-small: where its files go.
type smallTree struct {
	name, root string
	sync       bool // fsync each file before close
	syncEnd    bool // the phase ends with an fsync of root (it then has everything)
	baseline   bool
	skip, note string
}

// Notes of the mount-small subjects.
const (
	noteWriteback = "close and unlink return once the mount has noted them; the phase ends after fsync of the mount root, which waits for the gateway and commits"
	noteDurable   = "the default: close and unlink return once the gateway has the change"
	notePeer      = "another file system on this machine, in the same run; the phase ends after fsync of its directory"
)

// smallTrees are the subjects of mount-small: the mount with durable
// close (the default) and the mount with write-back
// (both skipped, with the reason skip, when mt is nil), every peer, and a
// local directory, with and without an fsync of each file.
func smallTrees(ctx context.Context, e *Env, mt *mounted, skip, local string) ([]smallTree, error) {
	var trees []smallTree
	if mt == nil {
		trees = append(trees, smallTree{name: "nas mount", skip: skip}, smallTree{name: "nas mount --writeback", skip: skip})
	} else {
		wb, err := mt.again(ctx, e, true)
		if err != nil {
			return nil, err
		}
		trees = append(trees, smallTree{name: "nas mount", root: mt.dir, note: noteDurable},
			smallTree{name: "nas mount --writeback", root: wb, syncEnd: true, note: noteWriteback})
	}
	for _, p := range e.MountPeers {
		d, err := e.PeerDir(p, "small")
		if err != nil {
			return nil, err
		}
		trees = append(trees, smallTree{name: p.Name, root: d, syncEnd: true, note: notePeer})
	}
	return append(trees, smallTree{name: "local dir", root: local, baseline: true},
		smallTree{name: "local dir, fsync each", root: local, sync: true, baseline: true,
			note: "each file fsynced before close, as the durable mount's close is"}), nil
}

// dir is t's directory of run rep: each subject has its own, as both
// mounts are of one branch.
func (t smallTree) dir(rep int) string {
	return filepath.Join(t.root, fmt.Sprintf("small-%x-%d", fnv32(t.name), rep))
}

// file is file i of run rep in t.
func (t smallTree) file(rep, i int) string { return filepath.Join(t.dir(rep), fmt.Sprintf("f%06d", i)) }

// smallBench runs the phases of mount-small: n files, in every tree.
type smallBench struct {
	e     *Env
	trees []smallTree
	n     int
}

// phase compares the trees at one phase (what), fn doing file i of a run;
// the create phase makes each run's directory first, and a write-back
// mount's phase ends once the gateway has everything.
func (b *smallBench) phase(ctx context.Context, what string, fn func(t smallTree, rep int) func(i int) error) ([]Row, error) {
	var subjects []Subject
	for _, t := range b.trees {
		subjects = append(subjects, Subject{Name: t.name, Skip: t.skip, Note: t.note, Baseline: t.baseline,
			Measure: func(ctx context.Context, rep int) (Sample, error) {
				if what == "create" {
					if err := os.MkdirAll(t.dir(rep), 0o755); err != nil {
						return Sample{}, err
					}
				}
				smp, err := smallPhase(ctx, b.n, fn(t, rep))
				if err == nil && t.syncEnd {
					// The phase is over when the gateway has it all.
					begin := time.Now()
					err = syncDir(t.root)
					smp.Elapsed += time.Since(begin)
				}
				return smp, err
			}})
	}
	return Compare(ctx, b.e.Profile.Reps, subjects, ByRate)
}

// lsDir lists dir with `ls -l` (every entry stat'ed), output discarded.
func lsDir(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "ls", "-l", "--color=never", dir)
	cmd.Stdout = io.Discard
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ls -l %s: %w: %s", dir, err, stderr.String())
	}
	return nil
}

// limitedBuffer keeps the first 4 KiB written to it.
type limitedBuffer struct{ b []byte }

// Write keeps what fits of p and reports all of it written.
func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// String returns what was kept.
func (l *limitedBuffer) String() string { return string(l.b) }

// runMountLs times ls -l of a directory of many entries through the
// mount and in a local directory.
func runMountLs(ctx context.Context, e *Env) ([]*Result, error) {
	sz := sizesFor(e.Profile.Mode)
	// The entries go in by the branch service's bulk import (their bytes
	// are never read by ls): filling through 100,000 PUTs would measure
	// the PUTs.
	fill := func(t *Target) error { return loadRepo(ctx, t.Gateway.Branches, "listing", sz.ls) }
	mt, skip, err := mountIfCan(ctx, e, "listing", fill)
	if err != nil {
		return nil, err
	}
	if mt != nil {
		defer mt.close()
	}
	local, err := e.TempDir("local-ls")
	if err != nil {
		return nil, err
	}
	ldir := filepath.Join(local, "data")
	if err := os.MkdirAll(ldir, 0o755); err != nil {
		return nil, err
	}
	for i := 0; i < sz.ls; i++ {
		f, err := os.Create(filepath.Join(local, curveKey(i)))
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	rows, err := Compare(ctx, e.Profile.Reps, []Subject{
		{Name: "nas mount", Skip: skip, Note: "each run lists from the gateway (names trusted 1 s)",
			Measure: func(ctx context.Context, rep int) (Sample, error) {
				time.Sleep(1100 * time.Millisecond) // past the TTL: a real listing every time
				return Once(ctx, 0, func(ctx context.Context) error { return lsDir(ctx, filepath.Join(mt.dir, "data")) })
			}},
		{Name: "local dir", Baseline: true, Note: "dentries and inodes in memory",
			Measure: func(ctx context.Context, rep int) (Sample, error) {
				return Once(ctx, 0, func(ctx context.Context) error { return lsDir(ctx, ldir) })
			}},
	}, ByTime)
	if err != nil {
		return nil, err
	}
	return []*Result{{Case: fmt.Sprintf("ls -l of %d entries", sz.ls), Reference: "nas mount", Rows: rows}}, nil
}

// gitTree writes n small files in n/100+1 directories under dir and
// commits them in a new git repository there.
func gitTree(ctx context.Context, dir string, n int, content *Content) error {
	for i := 0; i < n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%05d.go", i)), content.Bytes(uint64(i), 512), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "tree"}} {
		if err := gitIn(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

// gitIn runs git with args in dir, as a fixed author, without the
// system's configuration.
func gitIn(ctx context.Context, dir string, args ...string) error {
	// Through sh's cd, never cmd.Dir: a child that chdirs into a mount this
	// process serves, before it execs, can deadlock with the parent's
	// garbage collector (the vfork parent thread waits for the child).
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `cd "$0" && exec git "$@"`, dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com", "GIT_CONFIG_NOSYSTEM=1")
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %v in %s: %w: %s", args, dir, err, out.String())
	}
	return nil
}

// runMountGit times git status in a tree of many files through the
// mount and in a local directory.
func runMountGit(ctx context.Context, e *Env) ([]*Result, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("git is not installed")
	}
	sz := sizesFor(e.Profile.Mode)
	content := DefaultContent()
	local, err := e.TempDir("local-git")
	if err != nil {
		return nil, err
	}
	if err := gitTree(ctx, local, sz.git, content); err != nil {
		return nil, err
	}
	mt, skip, err := mountIfCan(ctx, e, "git", nil)
	if err != nil {
		return nil, err
	}
	if mt != nil {
		defer mt.close()
		// The same tree goes in through the mount (cp -a), as a checkout
		// into a sandbox would: git's index then matches what it sees.
		cmd := exec.CommandContext(ctx, "cp", "-a", local+"/.", mt.dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("copy the tree into the mount: %w: %s", err, out)
		}
		if err := gitIn(ctx, mt.dir, "status", "--porcelain"); err != nil { // refreshes the index once
			return nil, err
		}
	}
	status := func(dir string) func(ctx context.Context, rep int) (Sample, error) {
		return func(ctx context.Context, rep int) (Sample, error) {
			return Once(ctx, 0, func(ctx context.Context) error { return gitIn(ctx, dir, "status", "--porcelain") })
		}
	}
	var mdir string
	if mt != nil {
		mdir = mt.dir
	}
	rows, err := Compare(ctx, e.Profile.Reps, []Subject{
		{Name: "nas mount", Skip: skip, Note: "attributes trusted 1 s; git stats every file", Measure: status(mdir)},
		{Name: "local dir", Baseline: true, Measure: status(local)},
	}, ByTime)
	if err != nil {
		return nil, err
	}
	return []*Result{{Case: fmt.Sprintf("git status, %d files", sz.git), Reference: "nas mount", Rows: rows}}, nil
}

// fnv32 is the FNV-1a hash of s, for short unique directory names.
func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
