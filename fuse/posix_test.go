package fuse_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentnas/nas/client"
	"github.com/agentnas/nas/nastest"
)

// TestPOSIX runs the file-system checks against one real mount: each
// case works in its own directory and checks what the gateway then holds
// over S3, not only what the mount says.
func TestPOSIX(t *testing.T) {
	e := newEnv(t)
	e.put(t, "main", "seed/hello.txt", []byte("hello"))
	e.commit(t, "main")
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{})
	s3 := func(t *testing.T, key string) []byte {
		t.Helper()
		b, err := e.get(e.owner, "dev", key)
		if err != nil {
			t.Fatalf("S3 get %s: %v", key, err)
		}
		return b
	}
	s3Missing := func(t *testing.T, key string) {
		t.Helper()
		if _, err := e.get(e.owner, "dev", key); client.Code(err) != "NoSuchKey" {
			t.Fatalf("S3 get %s: %v, want NoSuchKey", key, err)
		}
	}
	cases := []struct {
		name string
		fn   func(t *testing.T, dir, key string)
	}{
		{"seeded file reads back", func(t *testing.T, dir, key string) {
			if got := readFile(t, filepath.Join(mnt, "seed/hello.txt")); string(got) != "hello" {
				t.Fatalf("got %q", got)
			}
		}},
		{"create and read back", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "a.txt")
			writeFile(t, p, []byte("one"))
			if got := readFile(t, p); string(got) != "one" {
				t.Fatalf("mount: %q", got)
			}
			if got := s3(t, key+"/a.txt"); string(got) != "one" {
				t.Fatalf("S3: %q", got)
			}
		}},
		{"a name that is not UTF-8 is refused", func(t *testing.T, dir, key string) {
			bad := filepath.Join(dir, "bad\xffname")
			if err := os.WriteFile(bad, []byte("x"), 0o644); !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("create: %v, want EINVAL", err)
			}
			if err := os.Mkdir(bad, 0o755); !errors.Is(err, syscall.EINVAL) {
				t.Fatalf("mkdir: %v, want EINVAL", err)
			}
		}},
		{"overwrite", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "a.txt")
			writeFile(t, p, []byte("first version, long"))
			writeFile(t, p, []byte("second"))
			if got := readFile(t, p); string(got) != "second" {
				t.Fatalf("mount: %q", got)
			}
			if got := s3(t, key+"/a.txt"); string(got) != "second" {
				t.Fatalf("S3: %q", got)
			}
		}},
		{"append", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "log")
			writeFile(t, p, []byte("line1\n"))
			for i := 2; i <= 4; i++ {
				f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
				must(t, err)
				fmt.Fprintf(f, "line%d\n", i)
				must(t, f.Close())
			}
			want := "line1\nline2\nline3\nline4\n"
			if got := readFile(t, p); string(got) != want {
				t.Fatalf("mount: %q", got)
			}
			if got := s3(t, key+"/log"); string(got) != want {
				t.Fatalf("S3: %q", got)
			}
		}},
		{"write at offsets and sparse growth", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "sparse")
			f, err := os.Create(p)
			must(t, err)
			_, err = f.WriteAt([]byte("end"), 10)
			must(t, err)
			_, err = f.WriteAt([]byte("ab"), 2)
			must(t, err)
			must(t, f.Close())
			want := "\x00\x00ab\x00\x00\x00\x00\x00\x00end"
			if got := readFile(t, p); string(got) != want {
				t.Fatalf("mount: %q", got)
			}
			if got := s3(t, key+"/sparse"); string(got) != want {
				t.Fatalf("S3: %q", got)
			}
		}},
		{"truncate shorter and longer", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "t")
			writeFile(t, p, []byte("0123456789"))
			must(t, os.Truncate(p, 4))
			if got := s3(t, key+"/t"); string(got) != "0123" {
				t.Fatalf("S3 after truncate to 4: %q", got)
			}
			must(t, os.Truncate(p, 6))
			if got := readFile(t, p); string(got) != "0123\x00\x00" {
				t.Fatalf("mount after growing to 6: %q", got)
			}
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			must(t, f.Truncate(2))
			_, err = f.WriteAt([]byte("Z"), 3)
			must(t, err)
			must(t, f.Close())
			if got := s3(t, key+"/t"); string(got) != "01\x00Z" {
				t.Fatalf("S3 after ftruncate and write: %q", got)
			}
		}},
		{"partial edit of a large file keeps its other bytes", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "big")
			data := pattern(7, 9<<20)
			writeFile(t, p, data)
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			_, err = f.WriteAt([]byte("PATCH"), 5<<20)
			must(t, err)
			must(t, f.Close())
			copy(data[5<<20:], "PATCH")
			if got := s3(t, key+"/big"); !bytes.Equal(got, data) {
				t.Fatalf("S3: %d bytes, differ from the expected %d", len(got), len(data))
			}
			if got := readFile(t, p); !bytes.Equal(got, data) {
				t.Fatal("mount: the bytes differ")
			}
		}},
		{"a large file written at its end streams while it is written", func(t *testing.T, dir, key string) {
			data := pattern(11, 40<<20+123)
			p := filepath.Join(dir, "streamed")
			f, err := os.Create(p)
			must(t, err)
			for off := 0; off < len(data); off += 1 << 20 {
				_, err := f.Write(data[off:min(off+1<<20, len(data))])
				must(t, err)
			}
			mt := time.Now()
			must(t, f.Close())
			if got := s3(t, key+"/streamed"); !bytes.Equal(got, data) {
				t.Fatal("S3: the streamed bytes differ")
			}
			inf := e.head(t, "dev", key+"/streamed")
			if !strings.HasSuffix(inf.ETag, "-3") {
				t.Fatalf("ETag %q: not sent as a 3-part stream", inf.ETag)
			}
			time.Sleep(300 * time.Millisecond)
			st, err := os.Stat(p)
			must(t, err)
			if d := st.ModTime().Sub(mt); d > time.Second || d < -time.Second {
				t.Fatalf("mtime %v, written at %v", st.ModTime(), mt)
			}
			// A write that is not at the end ends the stream; the file is sent whole.
			q := filepath.Join(dir, "patched")
			g, err := os.Create(q)
			must(t, err)
			_, err = g.Write(data[:20<<20])
			must(t, err)
			_, err = g.WriteAt([]byte("HEAD"), 0)
			must(t, err)
			_, err = g.Write(data[20<<20:])
			must(t, err)
			must(t, g.Close())
			want := append([]byte("HEAD"), data[4:]...)
			if got := s3(t, key+"/patched"); !bytes.Equal(got, want) {
				t.Fatal("S3: the patched bytes differ")
			}
			// Renamed before its first close: it lands at the new name only.
			r := filepath.Join(dir, "renamed.tmp")
			h, err := os.Create(r)
			must(t, err)
			_, err = h.Write(data[:20<<20])
			must(t, err)
			must(t, os.Rename(r, filepath.Join(dir, "renamed")))
			_, err = h.Write(data[20<<20 : 30<<20])
			must(t, err)
			must(t, h.Close())
			if got := s3(t, key+"/renamed"); !bytes.Equal(got, data[:30<<20]) {
				t.Fatal("S3: the renamed stream differs")
			}
			s3Missing(t, key+"/renamed.tmp")
		}},
		{"rename a file, also over another", func(t *testing.T, dir, key string) {
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			writeFile(t, a, []byte("A"))
			writeFile(t, b, []byte("B"))
			must(t, os.Rename(a, b))
			if _, err := os.Stat(a); !os.IsNotExist(err) {
				t.Fatalf("old name: %v", err)
			}
			if got := readFile(t, b); string(got) != "A" {
				t.Fatalf("mount: %q", got)
			}
			s3Missing(t, key+"/a")
			if got := s3(t, key+"/b"); string(got) != "A" {
				t.Fatalf("S3: %q", got)
			}
		}},
		{"rename a file written and not yet closed", func(t *testing.T, dir, key string) {
			a, b := filepath.Join(dir, "open.tmp"), filepath.Join(dir, "final")
			f, err := os.Create(a)
			must(t, err)
			_, err = f.WriteString("still open")
			must(t, err)
			must(t, os.Rename(a, b))
			_, err = f.WriteString(", then closed")
			must(t, err)
			must(t, f.Close())
			if got := s3(t, key+"/final"); string(got) != "still open, then closed" {
				t.Fatalf("S3: %q", got)
			}
			s3Missing(t, key+"/open.tmp")
		}},
		{"rename over a file still being written", func(t *testing.T, dir, key string) {
			w, err := os.Create(filepath.Join(dir, "target"))
			must(t, err)
			_, err = w.WriteString("pending, never to be seen")
			must(t, err)
			writeFile(t, filepath.Join(dir, "src"), []byte("the renamed one"))
			must(t, os.Rename(filepath.Join(dir, "src"), filepath.Join(dir, "target")))
			must(t, w.Close())
			if got := s3(t, key+"/target"); string(got) != "the renamed one" {
				t.Fatalf("S3: %q", got)
			}
			if got := readFile(t, filepath.Join(dir, "target")); string(got) != "the renamed one" {
				t.Fatalf("mount: %q", got)
			}
		}},
		{"rename a directory with its contents", func(t *testing.T, dir, key string) {
			must(t, os.MkdirAll(filepath.Join(dir, "d1/sub"), 0o755))
			writeFile(t, filepath.Join(dir, "d1/x"), []byte("x"))
			writeFile(t, filepath.Join(dir, "d1/sub/y"), []byte("y"))
			must(t, os.Rename(filepath.Join(dir, "d1"), filepath.Join(dir, "d2")))
			if got := readFile(t, filepath.Join(dir, "d2/sub/y")); string(got) != "y" {
				t.Fatalf("mount: %q", got)
			}
			if _, err := os.Stat(filepath.Join(dir, "d1")); !os.IsNotExist(err) {
				t.Fatalf("old directory: %v", err)
			}
			s3Missing(t, key+"/d1/x")
			if got := s3(t, key+"/d2/x"); string(got) != "x" {
				t.Fatalf("S3: %q", got)
			}
			// A file created in the renamed directory lands under its new name.
			writeFile(t, filepath.Join(dir, "d2/sub/z"), []byte("z"))
			if got := s3(t, key+"/d2/sub/z"); string(got) != "z" {
				t.Fatalf("S3: %q", got)
			}
		}},
		{"rename onto a non-empty directory fails", func(t *testing.T, dir, key string) {
			must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
			must(t, os.MkdirAll(filepath.Join(dir, "dst"), 0o755))
			writeFile(t, filepath.Join(dir, "dst/keep"), []byte("k"))
			// syscall.Rename: os.Rename refuses an existing directory itself.
			wantErrno(t, syscall.Rename(filepath.Join(dir, "src"), filepath.Join(dir, "dst")), syscall.ENOTEMPTY)
			writeFile(t, filepath.Join(dir, "file"), []byte("f"))
			wantErrno(t, syscall.Rename(filepath.Join(dir, "file"), filepath.Join(dir, "dst")), syscall.EISDIR)
			wantErrno(t, syscall.Rename(filepath.Join(dir, "dst"), filepath.Join(dir, "file")), syscall.ENOTDIR)
			// Onto an empty directory, a directory rename replaces it.
			must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))
			must(t, syscall.Rename(filepath.Join(dir, "dst"), filepath.Join(dir, "empty")))
			if got := readFile(t, filepath.Join(dir, "empty/keep")); string(got) != "k" {
				t.Fatalf("after replacing the empty directory: %q", got)
			}
		}},
		{"unlink while open", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "gone")
			writeFile(t, p, pattern(1, 300<<10))
			f, err := os.Open(p)
			must(t, err)
			defer f.Close()
			must(t, os.Remove(p))
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("stat after unlink: %v", err)
			}
			s3Missing(t, key+"/gone")
			got, err := io.ReadAll(f)
			must(t, err)
			if !bytes.Equal(got, pattern(1, 300<<10)) {
				t.Fatal("the open file's bytes changed after unlink")
			}
			// Writing to an unlinked file works and is never uploaded.
			w, err := os.Create(filepath.Join(dir, "scratch"))
			must(t, err)
			must(t, os.Remove(filepath.Join(dir, "scratch")))
			_, err = w.WriteString("lost")
			must(t, err)
			must(t, w.Close())
			s3Missing(t, key+"/scratch")
		}},
		{"mkdir and rmdir", func(t *testing.T, dir, key string) {
			d := filepath.Join(dir, "empty")
			must(t, os.Mkdir(d, 0o750))
			st, err := os.Stat(d)
			must(t, err)
			if !st.IsDir() || st.Mode().Perm() != 0o750 {
				t.Fatalf("mkdir made %v", st.Mode())
			}
			wantErrno(t, os.Mkdir(d, 0o755), syscall.EEXIST)
			writeFile(t, filepath.Join(d, "f"), nil)
			wantErrno(t, syscall.Rmdir(d), syscall.ENOTEMPTY)
			must(t, os.Remove(filepath.Join(d, "f")))
			// The emptied directory is still there until rmdir.
			time.Sleep(300 * time.Millisecond)
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				t.Fatalf("emptied directory: %v", err)
			}
			must(t, syscall.Rmdir(d))
			if _, err := os.Stat(d); !os.IsNotExist(err) {
				t.Fatalf("after rmdir: %v", err)
			}
		}},
		{"an emptied implicit directory stays until rmdir", func(t *testing.T, dir, key string) {
			e.put(t, "dev", key+"/implicit/only", []byte("o"))
			time.Sleep(300 * time.Millisecond) // another client's change shows within the TTL
			must(t, os.Remove(filepath.Join(dir, "implicit/only")))
			time.Sleep(300 * time.Millisecond)
			if st, err := os.Stat(filepath.Join(dir, "implicit")); err != nil || !st.IsDir() {
				t.Fatalf("implicit directory after its last file went: %v", err)
			}
			must(t, syscall.Rmdir(filepath.Join(dir, "implicit")))
		}},
		{"readdir of a large directory", func(t *testing.T, dir, key string) {
			const n = 6000 // more than one listing page
			var want []string
			for i := range n {
				name := fmt.Sprintf("f%05d", i)
				want = append(want, name)
				e.put(t, "dev", key+"/many/"+name, []byte(name))
			}
			got := names(t, filepath.Join(dir, "many"))
			if !slices.Equal(got, want) {
				t.Fatalf("readdir: %d names, want %d", len(got), len(want))
			}
			st, err := os.Stat(filepath.Join(dir, "many", "f05999"))
			must(t, err)
			if st.Size() != 6 {
				t.Fatalf("size %d", st.Size())
			}
		}},
		{"mtime and mode are kept", func(t *testing.T, dir, key string) {
			p := filepath.Join(dir, "script.sh")
			writeFile(t, p, []byte("#!/bin/sh\necho hi\n"))
			must(t, os.Chmod(p, 0o755))
			mt := time.Date(2020, 5, 17, 10, 30, 0, 123456789, time.UTC)
			must(t, os.Chtimes(p, mt, mt))
			time.Sleep(300 * time.Millisecond) // past the attribute TTL
			st, err := os.Stat(p)
			must(t, err)
			if st.Mode().Perm() != 0o755 || !st.ModTime().Equal(mt) {
				t.Fatalf("mode %v mtime %v", st.Mode(), st.ModTime())
			}
			if got := readFile(t, p); string(got) != "#!/bin/sh\necho hi\n" {
				t.Fatalf("chmod changed the bytes: %q", got)
			}
		}},
		{"symbolic links are stored faithfully, hard links refused", func(t *testing.T, dir, key string) {
			writeFile(t, filepath.Join(dir, "target"), []byte("T"))
			must(t, os.Symlink("target", filepath.Join(dir, "link")))
			if got, err := os.Readlink(filepath.Join(dir, "link")); err != nil || got != "target" {
				t.Fatalf("readlink: %q %v", got, err)
			}
			if got := readFile(t, filepath.Join(dir, "link")); string(got) != "T" {
				t.Fatalf("through the link: %q", got)
			}
			wantErrno(t, os.Link(filepath.Join(dir, "target"), filepath.Join(dir, "hard")), syscall.EPERM)
		}},
		{"concurrent readers and writers", func(t *testing.T, dir, key string) {
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 5 {
						p := filepath.Join(dir, fmt.Sprintf("w%d-%d", w, i))
						if err := os.WriteFile(p, pattern(w*10+i, 100<<10), 0o644); err != nil {
							errs <- err
							return
						}
						if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, pattern(w*10+i, 100<<10)) {
							errs <- fmt.Errorf("read back %s: %v", p, err)
							return
						}
					}
				}()
			}
			shared := filepath.Join(mnt, "seed/hello.txt")
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 10 {
						if b, err := os.ReadFile(shared); err != nil || string(b) != "hello" {
							errs <- fmt.Errorf("reader: %q %v", b, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if got := len(names(t, dir)); got != 20 {
				t.Fatalf("%d files, want 20", got)
			}
		}},
		{"names the gateway's keys can carry", func(t *testing.T, dir, key string) {
			for _, name := range []string{"spaces in name", "ünïcødé", "percent%2Fslash", "plus+and&amp", "q?mark"} {
				writeFile(t, filepath.Join(dir, name), []byte(name))
				if got := s3(t, key+"/"+name); string(got) != name {
					t.Fatalf("%q over S3: %q", name, got)
				}
			}
		}},
		{"unsupported operations get a clear errno", func(t *testing.T, dir, key string) {
			wantErrno(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644), syscall.EPERM)
			writeFile(t, filepath.Join(dir, "f"), []byte("x"))
			wantErrno(t, os.Chown(filepath.Join(dir, "f"), 12345, 12345), syscall.EPERM)
			wantErrno(t, os.WriteFile(filepath.Join(mnt, ".nas", "changes"), []byte("x"), 0o644), syscall.EACCES)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.ReplaceAll(tc.name, " ", "_")
			dir := filepath.Join(mnt, key)
			must(t, os.Mkdir(dir, 0o755))
			tc.fn(t, dir, key)
		})
	}
}

// TestFsyncDurableAcrossRestart: once fsync returns, the bytes survive a
// restart of the gateway, and the mount recovers when it comes back.
func TestFsyncDurableAcrossRestart(t *testing.T) {
	dataDir := t.TempDir()
	e := newEnv(t, nastest.Options{DataDir: dataDir})
	e.fork(t, "dev", "main")
	mnt, _ := e.mount(t, mountOpts{})
	f, err := os.Create(filepath.Join(mnt, "durable"))
	must(t, err)
	_, err = f.Write(pattern(3, 2<<20))
	must(t, err)
	must(t, f.Sync())

	addr := e.srv.Addr
	e.srv.Stop()
	// While the gateway is down, a call fails with EIO (after bounded
	// retries), never hangs.
	start := time.Now()
	_, err = os.ReadFile(filepath.Join(mnt, "never-looked-up"))
	wantErrno(t, err, syscall.EIO)
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the failing call took %v", d)
	}
	must(t, f.Close())

	srv2 := restartAt(t, dataDir, addr)
	got, err := e.get(owner(srv2), "dev", "durable")
	must(t, err)
	if !bytes.Equal(got, pattern(3, 2<<20)) {
		t.Fatal("the fsynced bytes did not survive the restart")
	}
	// The mount works again.
	writeFile(t, filepath.Join(mnt, "after"), []byte("back"))
	if got := readFile(t, filepath.Join(mnt, "durable")); !bytes.Equal(got, pattern(3, 2<<20)) {
		t.Fatal("read after recovery differs")
	}
}

// restartAt starts a gateway on dataDir listening at addr again.
func restartAt(t *testing.T, dataDir, addr string) *nastest.Server {
	t.Helper()
	return nastest.Start(t, nastest.Options{DataDir: dataDir, Addr: addr})
}

// TestForksSideBySide: two mounts of two forks do not see each other's
// changes, and share the host's chunk cache.
func TestForksSideBySide(t *testing.T) {
	e := newEnv(t)
	data := pattern(9, 3<<20)
	e.put(t, "main", "shared.bin", data)
	e.commit(t, "main")
	e.fork(t, "run-a", "main")
	e.fork(t, "run-b", "main")
	cache := t.TempDir()
	a, _ := e.mount(t, mountOpts{branch: "run-a", cacheDir: cache})
	b, _ := e.mount(t, mountOpts{branch: "run-b", cacheDir: cache})
	writeFile(t, filepath.Join(a, "only-a"), []byte("a"))
	must(t, os.Remove(filepath.Join(b, "shared.bin")))
	if _, err := os.Stat(filepath.Join(b, "only-a")); !os.IsNotExist(err) {
		t.Fatalf("fork b sees fork a's file: %v", err)
	}
	if got := readFile(t, filepath.Join(a, "shared.bin")); !bytes.Equal(got, data) {
		t.Fatal("fork a lost the shared file that fork b deleted")
	}
	if slices.Contains(names(t, b), "shared.bin") || !slices.Contains(names(t, a), "only-a") {
		t.Fatalf("listings: a %v, b %v", names(t, a), names(t, b))
	}
	// The chunk cache: after fork a read the file, every chunk is on disk.
	n := 0
	filepath.Walk(filepath.Join(cache, "chunks"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n++
		}
		return nil
	})
	if n == 0 {
		t.Fatal("nothing was cached")
	}
}

// TestWriteback: with write-back, close returns before the upload; fsync
// of the root waits for every file, and a refusal reaches fsync.
func TestWriteback(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	e.fork(t, "locked", "main")
	call(t, e.owner, "branch/protect", map[string]any{"repo": e.repo, "name": "locked"}, nil)
	mnt, _ := e.mount(t, mountOpts{writeback: true})
	must(t, os.Mkdir(filepath.Join(mnt, "many"), 0o755))
	for i := range 200 {
		writeFile(t, filepath.Join(mnt, "many", fmt.Sprintf("f%03d", i)), pattern(i, 4096))
	}
	// Before the uploads are confirmed, the mount reads its own bytes.
	if got := readFile(t, filepath.Join(mnt, "many", "f199")); !bytes.Equal(got, pattern(199, 4096)) {
		t.Fatal("reading a file queued for upload")
	}
	root, err := os.Open(mnt)
	must(t, err)
	must(t, root.Sync())
	root.Close()
	for i := range 200 {
		got, err := e.get(e.owner, "dev", fmt.Sprintf("many/f%03d", i))
		if err != nil || !bytes.Equal(got, pattern(i, 4096)) {
			t.Fatalf("many/f%03d after fsync of the root: %v", i, err)
		}
	}

	locked, _ := e.mount(t, mountOpts{writeback: true, branch: "locked"})
	f, err := os.Create(filepath.Join(locked, "refused"))
	must(t, err)
	_, err = f.WriteString("never")
	must(t, err)
	wantErrno(t, f.Sync(), syscall.EACCES)
	f.Close()
	g, err := os.Create(filepath.Join(locked, "refused-later"))
	must(t, err)
	_, err = g.WriteString("never")
	must(t, err)
	must(t, g.Close()) // queued: close cannot know yet
	root2, err := os.Open(locked)
	must(t, err)
	wantErrno(t, root2.Sync(), syscall.EACCES)
	root2.Close()
	if _, err := e.get(e.owner, "locked", "refused-later"); client.Code(err) != "NoSuchKey" {
		t.Fatalf("a refused file reached the protected branch: %v", err)
	}
}

// TestCommits: fsync of the mount root commits the branch at once;
// otherwise a commit follows a quiet period; nothing to commit makes none.
func TestCommits(t *testing.T) {
	e := newEnv(t)
	e.fork(t, "dev", "main")
	e.fork(t, "quiet", "main")
	head := func(branch string) string {
		var out struct {
			Branch struct {
				Head string `json:"head"`
			} `json:"branch"`
		}
		call(t, e.owner, "branch/get", map[string]any{"repo": e.repo, "name": branch}, &out)
		return out.Branch.Head
	}
	mnt, _ := e.mount(t, mountOpts{})
	before := head("dev")
	writeFile(t, filepath.Join(mnt, "a"), []byte("a"))
	if head("dev") != before {
		t.Fatal("committed without an fsync of the root (commits are off for this mount)")
	}
	root, err := os.Open(mnt)
	must(t, err)
	must(t, root.Sync())
	after := head("dev")
	if after == before {
		t.Fatal("fsync of the root did not commit")
	}
	must(t, root.Sync()) // nothing new: no empty commit
	root.Close()
	if head("dev") != after {
		t.Fatal("an fsync with nothing to commit made a commit")
	}

	q, _ := e.mount(t, mountOpts{branch: "quiet", commit: 300 * time.Millisecond})
	before = head("quiet")
	for i := range 3 {
		writeFile(t, filepath.Join(q, fmt.Sprintf("f%d", i)), []byte("x"))
	}
	deadline := time.Now().Add(20 * time.Second)
	for head("quiet") == before {
		if time.Now().After(deadline) {
			t.Fatal("no commit after the quiet period")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var log struct {
		Commits []struct {
			Message string `json:"message"`
		} `json:"commits"`
	}
	call(t, e.owner, "commit/log", map[string]any{"repo": e.repo, "ref": "quiet", "limit": 5}, &log)
	if len(log.Commits) == 0 || !strings.Contains(log.Commits[0].Message, "nas mount") {
		t.Fatalf("log: %+v", log)
	}
}

// TestDamagedChunkCache: a chunk cache file damaged on disk between two
// mounts is not served; the second mount notices, fetches the chunk from
// the gateway again and reads the right bytes.
func TestDamagedChunkCache(t *testing.T) {
	e := newEnv(t)
	data := pattern(11, 3<<20)
	e.fork(t, "dev", "main")
	e.put(t, "dev", "big.bin", data)
	cache := t.TempDir()
	a, _ := e.mount(t, mountOpts{cacheDir: cache})
	if got := readFile(t, filepath.Join(a, "big.bin")); !bytes.Equal(got, data) {
		t.Fatal("first read differs")
	}
	damaged := 0
	filepath.Walk(filepath.Join(cache, "chunks"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return nil
		}
		b[len(b)/2] ^= 0xff
		if os.WriteFile(p, b, 0o600) == nil {
			damaged++
		}
		return nil
	})
	if damaged == 0 {
		t.Fatal("nothing was cached to damage")
	}
	b, _ := e.mount(t, mountOpts{cacheDir: cache})
	if got := readFile(t, filepath.Join(b, "big.bin")); !bytes.Equal(got, data) {
		t.Fatal("a mount served a damaged cached chunk")
	}
}
