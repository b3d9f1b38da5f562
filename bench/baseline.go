package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ObjectStore is what the object workloads drive: an S3 target (Client),
// plain files (DirStore) or the loopback HTTP baseline (a Client against
// NullHandler). Buckets are directories for a DirStore.
type ObjectStore interface {
	CreateBucket(ctx context.Context, bucket string) error
	Put(ctx context.Context, bucket, key string, body io.Reader, size int64) error
	Get(ctx context.Context, bucket, key string) (int64, error)
	Head(ctx context.Context, bucket, key string) (int64, error)
	Delete(ctx context.Context, bucket, key string) error
	List(ctx context.Context, bucket, prefix, delimiter string, maxKeys int) (ListPage, error)
}

var (
	_ ObjectStore = (*Client)(nil)
	_ ObjectStore = (*DirStore)(nil)
)

// DirStore is the physical baseline: objects as plain files under Root,
// written the way a durable store must write them (create, write, fsync
// the file, fsync its directory) and read with plain reads. A mounted
// directory can be a DirStore too, to compare it with a local one.
type DirStore struct {
	Root string
	// NoSync skips the fsyncs (to compare with stores that do not sync).
	NoSync bool
}

// copyBuf is the read buffer of DirStore reads (the same size the HTTP
// transport buffers), pooled.
var copyBuf = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func (d *DirStore) path(bucket, key string) string {
	return filepath.Join(d.Root, bucket, filepath.FromSlash(key))
}

// CreateBucket makes the bucket's directory.
func (d *DirStore) CreateBucket(_ context.Context, bucket string) error {
	return os.MkdirAll(filepath.Join(d.Root, bucket), 0o700)
}

// Put writes a new file and makes it durable.
func (d *DirStore) Put(_ context.Context, bucket, key string, body io.Reader, _ int64) error {
	p := d.path(bucket, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	buf := copyBuf.Get().(*[]byte)
	_, err = io.CopyBuffer(onlyWriter{f}, body, *buf)
	copyBuf.Put(buf)
	if err == nil && !d.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	if d.NoSync {
		return nil
	}
	return syncDir(filepath.Dir(p))
}

// onlyWriter hides ReadFrom, so copies go through the pooled buffer.
type onlyWriter struct{ io.Writer }

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Get reads a file to its end.
func (d *DirStore) Get(_ context.Context, bucket, key string) (int64, error) {
	f, err := os.Open(d.path(bucket, key))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := copyBuf.Get().(*[]byte)
	defer copyBuf.Put(buf)
	return io.CopyBuffer(io.Discard, onlyReader{f}, *buf)
}

type onlyReader struct{ io.Reader }

// Head stats a file.
func (d *DirStore) Head(_ context.Context, bucket, key string) (int64, error) {
	st, err := os.Stat(d.path(bucket, key))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Delete removes a file and syncs its directory.
func (d *DirStore) Delete(_ context.Context, bucket, key string) error {
	p := d.path(bucket, key)
	if err := os.Remove(p); err != nil {
		return err
	}
	if d.NoSync {
		return nil
	}
	return syncDir(filepath.Dir(p))
}

// List counts the files under prefix (a directory path ending in "/" or
// empty); with delimiter "/" it reads one directory and counts its entries,
// as S3's common prefixes do.
func (d *DirStore) List(_ context.Context, bucket, prefix, delimiter string, _ int) (ListPage, error) {
	dir := filepath.Join(d.Root, bucket, filepath.FromSlash(prefix))
	lp := ListPage{Pages: 1}
	if delimiter == "/" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return lp, err
		}
		for _, e := range ents {
			if e.IsDir() {
				lp.Prefixes++
			} else {
				lp.Keys++
			}
		}
		return lp, nil
	}
	err := filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() {
			lp.Keys++
		}
		return nil
	})
	return lp, err
}

// NullHandler is the loopback HTTP baseline: an S3-shaped handler that
// keeps nothing but each object's length. PUT bodies are read and
// discarded; GET answers the recorded number of bytes from memory; HEAD
// and DELETE work on the lengths. What it costs is the HTTP exchange
// itself (and the client's signing), the floor under any S3 server on this
// machine.
type NullHandler struct {
	mu    sync.Mutex // guards sizes
	sizes map[string]int64
}

// NewNullHandler returns an empty NullHandler.
func NewNullHandler() *NullHandler { return &NullHandler{sizes: map[string]int64{}} }

// ServeHTTP answers PUT, GET, HEAD and DELETE of any path.
func (h *NullHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Path
	isObject := strings.Count(strings.Trim(key, "/"), "/") >= 1
	switch r.Method {
	case http.MethodPut:
		buf := copyBuf.Get().(*[]byte)
		n, err := io.CopyBuffer(io.Discard, onlyReader{r.Body}, *buf)
		copyBuf.Put(buf)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if isObject {
			h.mu.Lock()
			h.sizes[key] = n
			h.mu.Unlock()
		}
		w.Header().Set("ETag", `"00000000000000000000000000000000"`)
	case http.MethodGet, http.MethodHead:
		h.mu.Lock()
		n, ok := h.sizes[key]
		h.mu.Unlock()
		if !ok {
			http.Error(w, "<Error><Code>NoSuchKey</Code></Error>", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		if r.Method == http.MethodHead {
			return
		}
		block := DefaultContent().block
		for n > 0 {
			m := min(n, int64(len(block)))
			if _, err := w.Write(block[:m]); err != nil {
				return
			}
			n -= m
		}
	case http.MethodDelete:
		h.mu.Lock()
		delete(h.sizes, key)
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "not implemented", http.StatusNotImplemented)
	}
}

// Eviction reports how the page cache was emptied before a cold read.
type Eviction struct {
	Method   string // "drop_caches", "fadvise" or "none"
	Resident int64  // bytes of the evicted files still in the page cache afterwards
	Total    int64  // bytes of the evicted files
}

// String says how the cache was emptied and how much stayed resident.
func (e Eviction) String() string {
	if e.Total == 0 {
		return e.Method
	}
	return fmt.Sprintf("%s; %.1f%% of %s still resident afterwards (mincore)", e.Method, 100*float64(e.Resident)/float64(e.Total), FormatSize(e.Total))
}

// EvictDir pushes every file under dir out of the page cache: it syncs
// each file (dirty pages cannot be dropped) and calls posix_fadvise
// DONTNEED on it; with dropAll, it also writes 1 to
// /proc/sys/vm/drop_caches (root only, affects the whole machine). It then
// counts with mincore how much of the files is still resident. Pages mapped
// by a process (Badger maps its tables) stay resident under fadvise.
func EvictDir(dir string, dropAll bool) (Eviction, error) {
	ev := Eviction{Method: "fadvise"}
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return ev, fmt.Errorf("evict %s: %w", dir, err)
	}
	for _, p := range files {
		if err := fadviseDontNeed(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ev, fmt.Errorf("evict %s: %w", p, err)
		}
	}
	if dropAll {
		unix.Sync()
		if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0); err == nil {
			ev.Method = "drop_caches"
		} else {
			ev.Method = "fadvise (drop_caches refused: " + err.Error() + ")"
		}
	}
	for _, p := range files {
		res, total, err := residency(p)
		if err != nil {
			continue
		}
		ev.Resident += res
		ev.Total += total
	}
	return ev, nil
}

func fadviseDontNeed(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		// Read-only files cannot be synced through this descriptor; they
		// have no dirty pages of ours either.
		if f, err = os.Open(path); err != nil {
			return err
		}
	} else {
		_ = f.Sync()
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// residency returns how many bytes of the file are in the page cache.
func residency(path string) (resident, total int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Munmap(m)
	var sys unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &sys); err != nil {
		return 0, 0, err
	}
	page := int64(os.Getpagesize())
	vec := make([]byte, (st.Size()+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, 0, errno
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident += page
		}
	}
	// Count against the allocated size: sparse preallocated space (Badger's
	// logs) is neither data nor cache.
	alloc := min(st.Size(), sys.Blocks*512)
	return min(resident, alloc), alloc, nil
}

// DiskUsage is the space the files under dir occupy on disk (allocated
// blocks, so preallocated but unwritten space of sparse files is not
// counted).
func DiskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil
			}
			return err
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}

// DeleteMany removes the files of keys and then makes their directories'
// changes durable, each directory once (what a batch delete must do).
func (d *DirStore) DeleteMany(_ context.Context, bucket string, keys []string) error {
	dirs := map[string]bool{}
	for _, k := range keys {
		p := d.path(bucket, k)
		if err := os.Remove(p); err != nil {
			return err
		}
		dirs[filepath.Dir(p)] = true
	}
	if d.NoSync {
		return nil
	}
	for dir := range dirs {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}
